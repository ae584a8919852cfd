"""`openai` policy: async HTTP to OpenAI-compatible servers (vLLM, SGLang, the test server).

Against a vLLM server (detected on first use by its `/tokenize` route) episodes are token-in/token-out: turn prompts
are built as token ids (the server's chat template renders only the new messages) and sent to `/v1/completions`,
which takes token-id prompts and returns the sampled ids and their logprobs. Any other server gets
`/v1/chat/completions`; with `vllm_extras` it is still asked for token ids (`return_token_ids`), and each turn's
`prefix_ok` records whether its prompt extended the previous one.

Retries 429/5xx/connection errors with exponential backoff; every request has a hard timeout; several base URLs
share the load (least requests in flight, ties round robin), and one that just failed is left out for a cool-down
while another is healthy, so a dead server costs one failed request per cool-down instead of half of all attempts.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from swerl_cli.core.errors import ConfigError, PolicyError
from swerl_cli.policy import PolicyBackend, PolicyOptions
from swerl_cli.policy.base import Completion, ContextLimitError, EpisodeInfo, Sampling, reply_budget
from swerl_cli.policy.hf import parse_tool_calls, prompt_fields
from swerl_cli.policy.tokens import TurnPrompter

T = TypeVar("T")
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
SERVER_VERSION = "server"  # --policy-version server: read each turn's version from the server (GET /weight_info)
_CONTEXT_HINTS = ("maximum context length", "context length", "too long", "max_model_len", "context_length")


@dataclass(frozen=True, slots=True)
class OpenAIOptions(PolicyOptions):
    """The served model's name, the `--base-url`s, the key, the retry settings and `--policy-version`."""

    model: str | None = None
    base_url: Sequence[str] = ()
    api_key: str | None = None
    request_timeout_s: float = 600.0
    max_retries: int = 5
    backoff_s: float = 1.0
    vllm_extras: bool = True
    policy_version: str | None = None


class OpenAIPolicy(PolicyBackend):
    """Chat completions over HTTP; `vllm_extras` sends top_k/min_p/repetition_penalty and asks for token ids."""

    name = "openai"
    Options = OpenAIOptions
    distributed = "rebuild"  # collect --ray: each worker builds its own HTTP client from the options

    @classmethod
    def create(cls, options: OpenAIOptions) -> OpenAIPolicy:
        """The API key falls back to $OPENAI_API_KEY; the model name to `default`."""
        return cls(
            options.model or "default",
            list(options.base_url),
            api_key=options.api_key or os.environ.get("OPENAI_API_KEY"),
            request_timeout_s=options.request_timeout_s,
            max_retries=options.max_retries,
            backoff_s=options.backoff_s,
            vllm_extras=options.vllm_extras,
            version=options.policy_version,
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
        self.token_mode: bool | None = None  # token-id prompts (a vLLM server); None until probed
        self._detecting: asyncio.Future[bool | None] | None = None
        self._prompter = TurnPrompter(self._render, self._encode)

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
            "token_prompts": bool(self.token_mode),
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
        """One turn: token-id prompt to /completions against vLLM, chat completion otherwise; transient failures are
        retried and PolicyError is raised when retries run out."""
        if self.token_mode is None:
            if self._detecting is None:  # one probe for all the episodes that start together
                self._detecting = asyncio.ensure_future(self._detect())
            try:
                self.token_mode = await asyncio.shield(self._detecting)
            finally:
                self._detecting = None if self.token_mode is None else self._detecting
        before = await self._server_version() if self.version == SERVER_VERSION else None
        if self.token_mode:
            comp = await self._complete_tokens(messages, sampling, tools, episode)
        else:
            comp = await self._request("/chat/completions", self.body(messages, sampling, tools), parse_response)
        if before is not None:
            comp.policy_version, comp.policy_version_end = before, await self._server_version()
        return comp

    async def _server_version(self) -> str:
        """The weight version the (first) server reports at GET /weight_info (set by policy/refresh.py)."""
        url = f"{_root(self.base_urls[0])}/weight_info"
        try:
            resp = await self._client_for_loop().get(url, timeout=30)
            version = resp.json().get("weight_version") if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError) as e:
            raise PolicyError(f"{url}: cannot read the weight version: {type(e).__name__}: {e}") from None
        if not isinstance(version, str):
            raise PolicyError(
                f"{url}: no weight version (HTTP {resp.status_code}); --policy-version server needs a vLLM server "
                "with VLLM_SERVER_DEV_MODE=1 whose weights were loaded by `swerl_cli.policy.refresh`"
            )
        return version

    async def _detect(self) -> bool | None:
        """True when the server tokenizes like vLLM (POST /tokenize at its root): it then gets token-id prompts.
        The first URL that answers decides; None (ask again next turn) when none answers."""
        if not self.vllm_extras:
            return False
        client = self._client_for_loop()
        body = {"model": self.model, "prompt": "a", "add_special_tokens": False}
        for base in self.base_urls:
            try:
                resp = await client.post(f"{_root(base)}/tokenize", json=body, timeout=30)
            except httpx.HTTPError:
                continue
            try:
                return resp.status_code == 200 and isinstance(resp.json().get("tokens"), list)
            except (ValueError, AttributeError):
                return False
        return None

    async def _render(
        self, messages: list[dict[str, Any]], add_generation_prompt: bool, tools: list[dict[str, Any]] | None
    ) -> list[int]:
        """The server's chat template applied to `messages`, as token ids."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(m) for m in messages],
            "add_generation_prompt": add_generation_prompt,
            "add_special_tokens": False,
        }
        if tools:
            body["tools"] = tools
        return await self._request("/tokenize", body, _tokens, root=True)

    async def _encode(self, text: str) -> list[int]:
        body = {"model": self.model, "prompt": text, "add_special_tokens": False}
        return await self._request("/tokenize", body, _tokens, root=True)

    async def _complete_tokens(
        self,
        messages: list[dict[str, Any]],
        sampling: Sampling,
        tools: list[dict[str, Any]] | None,
        episode: EpisodeInfo | None,
    ) -> Completion:
        state = episode.tokens if episode is not None else None
        tp = await self._prompter.build(messages, tools, state)
        max_new = reply_budget(len(tp.ids), sampling, episode.max_context_tokens if episode is not None else None)
        body = self.token_body(tp.ids, sampling, max_new)
        n_prompt = len(tp.ids)
        comp = await self._request("/completions", body, lambda data, lat: parse_token_response(data, n_prompt, lat))
        if tools:
            comp.tool_calls = parse_tool_calls(comp.text)
            comp.finish_reason = "tool_calls" if comp.tool_calls else comp.finish_reason
        for name, value in prompt_fields(tp).items():
            setattr(comp, name, value)
        if state is not None:
            state.commit(comp.token_ids or [])
        return comp

    def token_body(self, prompt: list[int], sampling: Sampling, max_new: int) -> dict[str, Any]:
        """A /completions body with a token-id prompt; every sampling parameter explicit."""
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt,
            "n": 1,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": sampling.top_k,
            "min_p": sampling.min_p,
            "repetition_penalty": sampling.repetition_penalty,
            "max_tokens": max_new,
            "logprobs": 0,
            "return_token_ids": True,
            "skip_special_tokens": True,
        }
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        return body

    async def _request(
        self, path: str, body: dict[str, Any], parse: Callable[[Any, float], T], *, root: bool = False
    ) -> T:
        """POST `body` to `path` under a base URL (its root with `root`) and `parse(json, latency)` the reply,
        retrying transient failures (a reply `parse` rejects with ValueError included, like a 5xx)."""
        client = self._client_for_loop()
        last = "no attempt"
        healthy_left = False  # the last failure left another URL healthy: retry there at once
        for attempt in range(self.max_retries + 1):
            if attempt and not healthy_left:
                delay = self.backoff_s * (2 ** (attempt - 1)) * (0.5 + random.random())
                await asyncio.sleep(min(delay, 60.0))
            i = self._pick()
            base = _root(self.base_urls[i]) if root else self.base_urls[i]
            url = f"{base}{path}"
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
                out = parse(resp.json(), latency)
            except ValueError as e:  # garbage, empty or half a body: a broken server or proxy, retried like a 5xx
                what = {"/chat/completions": "chat completion", "/completions": "completion"}.get(path, path[1:])
                last = f"{url}: malformed {what} response: {e}"
                healthy_left = self._failed(i, attempt)
                continue
            self._down_until[i] = 0.0
            return out
        raise PolicyError(f"gave up after {self.max_retries + 1} attempts: {last}")

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        self._detecting = None


def _root(base_url: str) -> str:
    """The server root of a `.../v1` base URL (vLLM serves /tokenize there)."""
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


def _tokens(data: Any, latency_s: float = 0.0) -> list[int]:
    """The `tokens` of a /tokenize reply; ValueError (retried) when it has none."""
    tokens = _int_list(_expect(data, dict, "body").get("tokens"), "tokens")
    if tokens is None:
        raise ValueError("tokens: missing")
    return tokens


def parse_token_response(data: Any, n_prompt: int, latency_s: float = 0.0) -> Completion:
    """A vLLM /completions reply to a token-id prompt (`return_token_ids`, `logprobs: 0`) as a Completion;
    ValueError (retried) on a reply of the wrong shape."""
    choices = _expect(_expect(data, dict, "body").get("choices"), list, "choices")
    if not choices:
        raise ValueError("choices: empty")
    choice = _expect(choices[0], dict, "choices[0]")
    token_ids = _int_list(choice.get("token_ids"), "choices[0].token_ids")
    if token_ids is None:
        raise ValueError("choices[0].token_ids: missing (the server ignored return_token_ids)")
    lp = choice.get("logprobs") or {}
    values = lp.get("token_logprobs") if isinstance(lp, dict) else None
    try:
        logprobs = [float(v) for v in values] if values else None
    except (TypeError, ValueError):
        logprobs = None
    if logprobs is not None and len(logprobs) != len(token_ids):
        logprobs = None  # misaligned: keep ids exact rather than guess
    finish = choice.get("finish_reason") or "stop"
    return Completion(
        text=_expect(choice.get("text") or "", str, "choices[0].text"),
        token_ids=token_ids,
        logprobs=logprobs,
        finish_reason="length" if finish == "length" else "stop",
        usage={"prompt_tokens": n_prompt, "completion_tokens": len(token_ids)},
        latency_s=latency_s,
    )


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
