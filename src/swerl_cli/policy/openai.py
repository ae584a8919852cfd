"""`openai` policy: async HTTP to OpenAI-compatible servers (vLLM, SGLang, the test server).

Against a vLLM server (detected on first use by its `/tokenize` route) episodes are token-in/token-out: turn prompts
are built as token ids (the server's chat template renders only the new messages) and sent to `/v1/completions`,
which takes token-id prompts and returns the sampled ids and their logprobs. Any other server gets
`/v1/chat/completions`; with `vllm_extras` it is still asked for token ids (`return_token_ids`), and each turn's
`prefix_ok` records whether its prompt extended the previous one.

Requests go through `endpoints.py` (retries, timeouts, several base URLs sharing the load); request bodies and
reply parsing are `openai_wire.py`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from swerl_cli.core.aio import within
from swerl_cli.core.config import flag
from swerl_cli.core.errors import PolicyError, UsageError
from swerl_cli.policy import PolicyBackend, PolicyOptions
from swerl_cli.policy.base import Completion, EpisodeInfo, Sampling, identity, reply_budget
from swerl_cli.policy.endpoints import Endpoints, server_root
from swerl_cli.policy.flags import MODEL, POLICY_VERSION
from swerl_cli.policy.openai_wire import (
    chat_body,
    parse_response,
    parse_token_response,
    token_body,
    tokens_of,
    wire_message,
)
from swerl_cli.policy.tokens import TurnPrompter
from swerl_cli.policy.turns import finish_turn, parse_tool_calls

SERVER_VERSION = "server"  # --policy-version server: read each turn's version from the server (GET /weight_info)


@dataclass(frozen=True, slots=True)
class OpenAIOptions(PolicyOptions):
    """The served model's name, the `--base-url`s, the key, the retry settings and `--policy-version`."""

    model: str | None = flag(None, MODEL)
    base_url: Sequence[str] = flag(
        (), "OpenAI-compatible base URL (http(s)://…/v1), required by the openai policy; repeat to spread load."
    )
    api_key: str | None = None
    request_timeout_s: float = flag(600.0, "Hard timeout of one policy request.")
    max_retries: int = flag(5, "Retries of a failed policy request (429/5xx/connection).")
    backoff_s: float = 1.0
    vllm_extras: bool = True
    policy_version: str | None = flag(None, POLICY_VERSION)


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
            raise UsageError(
                "the openai policy (the default --policy) needs --base-url URL of an OpenAI-compatible server "
                "(e.g. http://127.0.0.1:8000/v1), or choose another --policy (hf, vllm, gold, replay)"
            )
        self.model = model
        self.endpoints = Endpoints(
            base_urls,
            api_key=api_key,
            request_timeout_s=request_timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
        )
        self.base_urls = self.endpoints.urls
        self.vllm_extras = vllm_extras
        self.version = version
        self.token_mode: bool | None = None  # token-id prompts (a vLLM server); None until probed
        self._detecting: asyncio.Future[bool | None] | None = None
        self._prompter = TurnPrompter(self._render, self._encode)

    def spread(self, key: int) -> None:
        """Start the round robin over the base URLs at `key` (Endpoints.spread)."""
        self.endpoints.spread(key)

    def describe(self) -> dict[str, Any]:
        """The `policy` record fields."""
        return {
            **identity(self.name, self.model, self.version),
            "base_urls": list(self.base_urls),
            "token_prompts": bool(self.token_mode),
        }

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
            body = chat_body(self.model, messages, sampling, tools, self.vllm_extras)
            comp = await self.endpoints.post("/chat/completions", body, parse_response)
        if before is not None:
            comp.policy_version, comp.policy_version_end = before, await self._server_version()
        return comp

    def _probe_timeout_s(self) -> float:
        """The whole time a probe (/tokenize, /weight_info) may take, from sending to the last byte of the reply:
        30 s, or --request-timeout-s when shorter. A total, not httpx's idle limit, which a server sending one byte
        per second never reached (the first turn then waited forever)."""
        return min(30.0, self.endpoints.request_timeout_s)

    async def _server_version(self) -> str:
        """The weight version the (first) server reports at GET /weight_info (set by policy/refresh.py)."""
        import httpx  # imported by the first request (endpoints.py), not at import: see there

        url = f"{server_root(self.base_urls[0])}/weight_info"
        try:
            resp = await within(self.endpoints.client().get(url), self._probe_timeout_s())
            version = resp.json().get("weight_version") if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError, asyncio.TimeoutError) as e:
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
        import httpx

        client = self.endpoints.client()
        body = {"model": self.model, "prompt": "a", "add_special_tokens": False}
        for base in self.base_urls:
            try:
                resp = await within(client.post(f"{server_root(base)}/tokenize", json=body), self._probe_timeout_s())
            except (httpx.HTTPError, asyncio.TimeoutError):
                continue  # no answer in time counts as no answer (a connection error): the next URL, or next turn
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
            "messages": [wire_message(m) for m in messages],
            "add_generation_prompt": add_generation_prompt,
            "add_special_tokens": False,
        }
        if tools:
            body["tools"] = tools
        return await self.endpoints.post("/tokenize", body, tokens_of, root=True)

    async def _encode(self, text: str) -> list[int]:
        body = {"model": self.model, "prompt": text, "add_special_tokens": False}
        return await self.endpoints.post("/tokenize", body, tokens_of, root=True)

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
        body = token_body(self.model, tp.ids, sampling, max_new)
        n_prompt = len(tp.ids)
        comp = await self.endpoints.post(
            "/completions", body, lambda data, lat: parse_token_response(data, n_prompt, lat)
        )
        if tools:
            comp.tool_calls = parse_tool_calls(comp.text)
            comp.finish_reason = "tool_calls" if comp.tool_calls else comp.finish_reason
        return finish_turn(comp, tp, state)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.endpoints.aclose()
        self._detecting = None
