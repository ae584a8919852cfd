"""The wire format of the `openai` policy: request bodies with every sampling parameter explicit, and the replies
of `/v1/chat/completions`, `/v1/completions` (token-id prompts) and vLLM's `/tokenize` checked field by field.

A reply of the wrong shape raises ValueError, which the sender (policy/endpoints.py) retries like a 5xx.
"""

from __future__ import annotations

from typing import Any

from swerl_cli.policy.base import Completion, Sampling

WIRE_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name")


def chat_body(
    model: str,
    messages: list[dict[str, Any]],
    sampling: Sampling,
    tools: list[dict[str, Any]] | None,
    vllm_extras: bool,
) -> dict[str, Any]:
    """A /chat/completions body: every sampling parameter explicit, so server defaults cannot leak in; with
    `vllm_extras` also top_k/min_p/repetition_penalty and a request for the sampled token ids."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [wire_message(m) for m in messages],
        "n": 1,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_new_tokens,
        "logprobs": True,
        "top_logprobs": 0,
    }
    _seed_and_stop(body, sampling)
    if tools:
        body["tools"] = tools
        body["tool_choice"] = "auto"
    if vllm_extras:
        body.update(
            top_k=sampling.top_k,
            min_p=sampling.min_p,
            repetition_penalty=sampling.repetition_penalty,
            return_token_ids=True,
            skip_special_tokens=True,
        )
    return body


def token_body(model: str, prompt: list[int], sampling: Sampling, max_new: int) -> dict[str, Any]:
    """A /completions body with a token-id prompt; every sampling parameter explicit."""
    body: dict[str, Any] = {
        "model": model,
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
    _seed_and_stop(body, sampling)
    return body


def _seed_and_stop(body: dict[str, Any], sampling: Sampling) -> None:
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if sampling.stop:
        body["stop"] = list(sampling.stop)


def tokens_of(data: Any, latency_s: float = 0.0) -> list[int]:
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


def wire_message(m: dict[str, Any]) -> dict[str, Any]:
    """Only the OpenAI fields go on the wire (records may carry more)."""
    return {k: v for k, v in m.items() if k in WIRE_FIELDS}


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
