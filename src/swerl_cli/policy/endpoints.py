"""Requests to one or more OpenAI-compatible base URLs, as the `openai` policy sends them (policy/openai.py).

Retries 429/5xx/connection errors and malformed replies with exponential backoff; every request has a hard
timeout; several base URLs share the load (least requests in flight, ties round robin), and one that just failed is
left out for a cool-down while another is healthy, so a dead server costs one failed request per cool-down instead
of half of all attempts.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from swerl_cli.core.aio import within
from swerl_cli.core.errors import PolicyError
from swerl_cli.policy.base import ContextLimitError
from swerl_cli.policy.checks import check_base_url

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_CONTEXT_HINTS = ("maximum context length", "context length", "too long", "max_model_len", "context_length")
_WHAT = {"/chat/completions": "chat completion", "/completions": "completion"}


def server_root(base_url: str) -> str:
    """The server root of a `.../v1` base URL (vLLM serves /tokenize there)."""
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


class Endpoints:
    """The base URLs of one policy, the HTTP client they share, and what each has in flight or has just failed."""

    def __init__(
        self,
        base_urls: list[str],
        *,
        api_key: str | None = None,
        request_timeout_s: float = 600.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
    ):
        for url in base_urls:
            check_base_url(url)
        self.urls = [u.rstrip("/") for u in base_urls]
        self.api_key = api_key
        self.request_timeout_s = request_timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._in_flight = [0] * len(self.urls)
        self._down_until = [0.0] * len(self.urls)  # monotonic time before which a failed URL is avoided
        self._next = 0
        self._client: httpx.AsyncClient | None = None

    def spread(self, key: int) -> None:
        """Start the round robin at URL `key % n`: a policy built for one episode (a cluster worker builds one per
        episode) would otherwise send every episode's first request to the first URL."""
        self._next = key % len(self.urls)

    def client(self) -> httpx.AsyncClient:
        """The HTTP client (made on first use, inside the event loop that uses it)."""
        if self._client is None:
            import httpx  # here, not at import: `swerl collect --help` builds the policy options without it

            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
            self._client = httpx.AsyncClient(
                headers=headers, timeout=httpx.Timeout(self.request_timeout_s), limits=limits
            )
        return self._client

    def _pick(self) -> int:
        """A URL not cooling down after a failure (any, if all are), then least requests in flight; ties round
        robin."""
        n, now = len(self.urls), time.monotonic()
        order = [(self._next + i) % n for i in range(n)]
        best = min(order, key=lambda i: (self._down_until[i] > now, self._in_flight[i]))
        self._next = (best + 1) % n
        return best

    def _failed(self, i: int, attempt: int) -> bool:
        """Put URL `i` in cool-down; True when another URL is healthy, so the retry need not back off first."""
        now = time.monotonic()
        self._down_until[i] = now + min(60.0, self.backoff_s * 2**attempt)
        return any(until <= now for until in self._down_until)

    async def post(self, path: str, body: dict[str, Any], parse: Callable[[Any, float], T], *, root: bool = False) -> T:
        """POST `body` to `path` under a base URL (its root with `root`) and `parse(json, latency)` the reply,
        retrying transient failures (a reply `parse` rejects with ValueError included, like a 5xx)."""
        last = "no attempt"
        healthy_left = False  # the last failure left another URL healthy: retry there at once
        for attempt in range(self.max_retries + 1):
            if attempt and not healthy_left:
                delay = self.backoff_s * (2 ** (attempt - 1)) * (0.5 + random.random())
                await asyncio.sleep(min(delay, 60.0))
            i = self._pick()
            out, why = await self._attempt(i, path, body, parse, root)
            if why is None:
                self._down_until[i] = 0.0
                return cast(T, out)
            last, healthy_left = why, self._failed(i, attempt)
        raise PolicyError(f"gave up after {self.max_retries + 1} attempts: {last}")

    async def _attempt(
        self, i: int, path: str, body: dict[str, Any], parse: Callable[[Any, float], T], root: bool
    ) -> tuple[T | None, str | None]:
        """One request to URL `i`: (parsed, None), or (None, why) for a failure worth retrying; a context overflow
        or another 4xx is raised at once."""
        import httpx

        url = f"{server_root(self.urls[i]) if root else self.urls[i]}{path}"
        self._in_flight[i] += 1
        t0 = time.perf_counter()
        try:
            resp = await within(self.client().post(url, json=body), self.request_timeout_s)
        except (httpx.TransportError, asyncio.TimeoutError) as e:
            return None, f"{url}: {type(e).__name__}: {e}".rstrip(": ")
        finally:
            self._in_flight[i] -= 1
        latency = time.perf_counter() - t0
        if resp.status_code in RETRY_STATUS:
            return None, f"{url}: HTTP {resp.status_code}: {resp.text[:200]}"
        if resp.status_code == 400 and any(h in resp.text.lower() for h in _CONTEXT_HINTS):
            raise ContextLimitError(f"{url}: prompt exceeds the model's context: {resp.text[:200]}")
        if resp.status_code != 200:
            raise PolicyError(f"{url}: HTTP {resp.status_code}: {resp.text[:300]}")
        try:
            return parse(resp.json(), latency), None
        except ValueError as e:  # garbage, empty or half a body: a broken server or proxy, retried like a 5xx
            return None, f"{url}: malformed {_WHAT.get(path, path[1:])} response: {e}"

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None
