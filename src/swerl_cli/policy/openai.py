"""`openai` policy: async HTTP to OpenAI-compatible /v1/chat/completions servers (vLLM, SGLang, the test server).

Against vLLM it asks for the exact token ids (`return_token_ids`) and the sampled tokens' logprobs, so the
trajectory holds what the sampler produced. Retries 429/5xx/connection errors with exponential backoff; every
request has a hard timeout; several base URLs share the load (least requests in flight, ties round robin), and
one that just failed is left out for a cool-down while another is healthy, so a dead server costs one failed request
per cool-down instead of half of all attempts.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any

import httpx

from swerl_cli.errors import ConfigError, PolicyError
from swerl_cli.policy.base import Completion, ContextLimitError, EpisodeInfo, Sampling

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_CONTEXT_HINTS = ("maximum context length", "context length", "too long", "max_model_len", "context_length")


class OpenAIPolicy:
    """Chat completions over HTTP; `vllm_extras` sends top_k/min_p/repetition_penalty and asks for token ids."""

    name = "openai"
    distributed = "rebuild"  # collect --ray: each worker builds its own HTTP client from the config

    @classmethod
    def from_config(cls, cfg: Any) -> OpenAIPolicy:
        """Built from the collect config (the API key falls back to $OPENAI_API_KEY)."""
        return cls(
            cfg.model or "default",
            list(cfg.base_url),
            api_key=cfg.api_key or os.environ.get("OPENAI_API_KEY"),
            request_timeout_s=cfg.request_timeout_s,
            max_retries=cfg.max_retries,
            backoff_s=cfg.backoff_s,
            vllm_extras=cfg.vllm_extras,
            version=cfg.policy_version,
        )

    def __init__(
        self,
        model: str,
        base_urls: list[str],
        *,
        api_key: str | None = None,
        request_timeout_s: float = 600.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        vllm_extras: bool = True,
        version: str | None = None,
    ):
        if not base_urls:
            raise ConfigError("the openai policy needs at least one --base-url (e.g. http://127.0.0.1:8000/v1)")
        self.model = model
        self.base_urls = [u.rstrip("/") for u in base_urls]
        self.api_key = api_key
        self.request_timeout_s = request_timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.vllm_extras = vllm_extras
        self.version = version
        self._in_flight = [0] * len(self.base_urls)
        self._down_until = [0.0] * len(self.base_urls)  # monotonic time before which a failed URL is avoided
        self._next = 0
        self._client: httpx.AsyncClient | None = None

    def spread(self, key: int) -> None:
        """Start the round robin at URL `key % n`: a policy built for one episode (a cluster worker builds one per
        episode) would otherwise send every episode's first request to the first URL."""
        self._next = key % len(self.base_urls)

    def describe(self) -> dict[str, Any]:
        """The `policy` record fields."""
        return {
            "backend": self.name,
            "model": self.model,
            "version": self.version or self.model,
            "base_urls": list(self.base_urls),
        }

    def _client_for_loop(self) -> httpx.AsyncClient:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
            self._client = httpx.AsyncClient(
                headers=headers, timeout=httpx.Timeout(self.request_timeout_s), limits=limits
            )
        return self._client

    def _pick(self) -> int:
        """A URL not cooling down after a failure (any, if all are), then least requests in flight; ties round
        robin."""
        n, now = len(self.base_urls), time.monotonic()
        order = [(self._next + i) % n for i in range(n)]
        best = min(order, key=lambda i: (self._down_until[i] > now, self._in_flight[i]))
        self._next = (best + 1) % n
        return best

    def _failed(self, i: int, attempt: int) -> bool:
        """Put URL `i` in cool-down; True when another URL is healthy, so the retry need not back off first."""
        now = time.monotonic()
        self._down_until[i] = now + min(60.0, self.backoff_s * 2**attempt)
        return any(until <= now for until in self._down_until)

    def body(self, messages: list[dict[str, Any]], sampling: Sampling, tools: list[dict[str, Any]] | None) -> dict:
        """The request body: every sampling parameter explicit, so server defaults cannot leak in."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(m) for m in messages],
            "n": 1,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_new_tokens,
            "logprobs": True,
            "top_logprobs": 0,
        }
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if self.vllm_extras:
            body.update(
                top_k=sampling.top_k,
                min_p=sampling.min_p,
                repetition_penalty=sampling.repetition_penalty,
                return_token_ids=True,
                skip_special_tokens=True,
            )
        return body

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        sampling: Sampling,
        *,
        tools: list[dict[str, Any]] | None = None,
        episode: EpisodeInfo | None = None,
    ) -> Completion:
        """POST one chat completion, retrying transient failures; raise PolicyError when retries run out."""
        body = self.body(messages, sampling, tools)
        client = self._client_for_loop()
        last = "no attempt"
        healthy_left = False  # the last failure left another URL healthy: retry there at once
        for attempt in range(self.max_retries + 1):
            if attempt and not healthy_left:
                delay = self.backoff_s * (2 ** (attempt - 1)) * (0.5 + random.random())
                await asyncio.sleep(min(delay, 60.0))
            i = self._pick()
            url = f"{self.base_urls[i]}/chat/completions"
            self._in_flight[i] += 1
            t0 = time.perf_counter()
            try:
                resp = await asyncio.wait_for(client.post(url, json=body), self.request_timeout_s)
            except (httpx.TransportError, asyncio.TimeoutError) as e:
                last = f"{url}: {type(e).__name__}: {e}".rstrip(": ")
                healthy_left = self._failed(i, attempt)
                continue
            finally:
                self._in_flight[i] -= 1
            latency = time.perf_counter() - t0
            if resp.status_code in RETRY_STATUS:
                last = f"{url}: HTTP {resp.status_code}: {resp.text[:200]}"
                healthy_left = self._failed(i, attempt)
                continue
            if resp.status_code == 400 and any(h in resp.text.lower() for h in _CONTEXT_HINTS):
                raise ContextLimitError(f"{url}: prompt exceeds the model's context: {resp.text[:200]}")
            if resp.status_code != 200:
                raise PolicyError(f"{url}: HTTP {resp.status_code}: {resp.text[:300]}")
            try:
                completion = parse_response(resp.json(), latency)
            except ValueError as e:  # garbage, empty or half a body: a broken server or proxy, retried like a 5xx
                last = f"{url}: malformed chat completion response: {e}"
                healthy_left = self._failed(i, attempt)
                continue
            self._down_until[i] = 0.0
            return completion
        raise PolicyError(f"gave up after {self.max_retries + 1} attempts: {last}")

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _wire_message(m: dict[str, Any]) -> dict[str, Any]:
    """Only the OpenAI fields go on the wire (records may carry more)."""
    return {k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "tool_call_id", "name")}


def _expect(value: Any, kind: type, what: str) -> Any:
    if not isinstance(value, kind):
        raise ValueError(f"{what}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def _int_list(value: Any, what: str) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in value):
        raise ValueError(f"{what}: expected a list of token ids")
    return list(value)


def parse_response(data: Any, latency_s: float = 0.0) -> Completion:
    """Turn a chat completion JSON (vLLM's token-id extension included when present) into a Completion.

    Every field used is type-checked: a reply of the wrong shape raises ValueError (the caller retries it).
    """
    choices = _expect(_expect(data, dict, "body").get("choices"), list, "choices")
    if not choices:
        raise ValueError("choices: empty")
    choice = _expect(choices[0], dict, "choices[0]")
    msg = _expect(choice.get("message") or {}, dict, "choices[0].message")
    text = _expect(msg.get("content") or "", str, "choices[0].message.content")
    tool_calls = msg.get("tool_calls") or None
    if tool_calls is not None and not all(isinstance(c, dict) for c in _expect(tool_calls, list, "tool_calls")):
        raise ValueError("choices[0].message.tool_calls: expected a list of objects")
    token_ids = _int_list(choice.get("token_ids"), "choices[0].token_ids")
    lp = choice.get("logprobs") or {}
    content_lp = lp.get("content") if isinstance(lp, dict) else None
    try:
        logprobs = [float(t["logprob"]) for t in content_lp] if content_lp else None
    except (TypeError, KeyError, ValueError):
        raise ValueError("choices[0].logprobs.content: expected objects with a numeric logprob") from None
    if logprobs is not None and token_ids is not None and len(logprobs) != len(token_ids):
        # vLLM emits no logprob entry for a stop token it strips from the text: keep ids exact, drop misaligned lp
        logprobs = None
    usage = data.get("usage") or {}
    usage = usage if isinstance(usage, dict) else {}
    finish = choice.get("finish_reason") or "stop"
    return Completion(
        text=text,
        token_ids=token_ids,
        logprobs=logprobs,
        finish_reason=finish if finish in ("stop", "length", "tool_calls") else "stop",
        prompt_token_ids=_int_list(data.get("prompt_token_ids"), "prompt_token_ids"),
        tool_calls=tool_calls,
        usage={k: int(v) for k, v in usage.items() if isinstance(v, int)},
        latency_s=latency_s,
    )
