"""A stand-in for the few vLLM names `policy/vllm.py` uses, for this GPU-less machine.

It mirrors the shapes of vLLM's v1 async API (`AsyncEngineArgs`, `AsyncLLM.from_engine_args`, the async generator
`generate(prompt, sampling_params, request_id)`, `RequestOutput.outputs[0]` with `token_ids`, per-position logprob
dicts and `finish_reason`, `shutdown()`), so the adapter's request building, output mapping and concurrency are
tested here. The engine "samples" by tokenising a scripted reply and appending the stop token; each logprob is a
distinct, position-dependent value so misalignment would show. The real engine is exercised by tests/gpu/.
"""

from __future__ import annotations

import asyncio
import enum
import sys
import types
from dataclasses import dataclass
from typing import Any


class RequestOutputKind(enum.Enum):
    CUMULATIVE = 0
    DELTA = 1
    FINAL_ONLY = 2


@dataclass
class SamplingParams:
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    max_tokens: int = 16
    seed: int | None = None
    logprobs: int | None = None
    stop: list[str] | None = None
    skip_special_tokens: bool = True
    output_kind: RequestOutputKind = RequestOutputKind.CUMULATIVE


class AsyncEngineArgs:
    """Keeps what it was given, so tests can check the engine arguments collect passed."""

    def __init__(self, model: str, **kwargs: Any):
        self.model, self.kwargs = model, kwargs


@dataclass
class _Logprob:
    logprob: float


@dataclass
class _CompletionOutput:
    text: str
    token_ids: list[int]
    logprobs: list[dict[int, _Logprob]] | None
    finish_reason: str


@dataclass
class _RequestOutput:
    request_id: str
    prompt_token_ids: list[int]
    outputs: list[_CompletionOutput]
    finished: bool = True


class AsyncLLM:
    """Records every request; `in_flight_max` shows how many were being served at once."""

    instances: list[AsyncLLM] = []
    script: list[str] = ["ok\n```command\nsubmit\n```"]
    max_model_len = 4096
    delay_s = 0.05

    def __init__(self, args: AsyncEngineArgs):
        from transformers import AutoTokenizer

        self.args = args
        self.tok = AutoTokenizer.from_pretrained(args.model)
        self.eos = self.tok.convert_tokens_to_ids("<|im_end|>")
        self.requests: list[tuple[list[int], SamplingParams, str]] = []
        self.in_flight = self.in_flight_max = 0
        self.is_shut_down = False
        AsyncLLM.instances.append(self)

    @classmethod
    def from_engine_args(cls, args: AsyncEngineArgs) -> AsyncLLM:
        return cls(args)

    async def generate(self, prompt: dict[str, Any], sampling_params: SamplingParams, request_id: str):
        ids_in = list(prompt["prompt_token_ids"])
        if len(ids_in) > self.max_model_len:
            raise ValueError(
                f"The decoder prompt (length {len(ids_in)}) is longer than the maximum model length of "
                f"{self.max_model_len}."
            )
        self.requests.append((ids_in, sampling_params, request_id))
        self.in_flight += 1
        self.in_flight_max = max(self.in_flight_max, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        reply = self.script[min(_assistant_turns(self.tok.decode(ids_in)), len(self.script) - 1)]
        ids, finish = self.tok.encode(reply, add_special_tokens=False) + [self.eos], "stop"
        if len(ids) > sampling_params.max_tokens:
            ids, finish = ids[: sampling_params.max_tokens], "length"
        logprobs = [{t: _Logprob(-0.01 * (i + 1))} for i, t in enumerate(ids)]
        text = self.tok.decode(ids[:-1] if finish == "stop" else ids, skip_special_tokens=True)
        yield _RequestOutput(request_id, ids_in, [_CompletionOutput(text, ids, logprobs, finish)])

    def shutdown(self) -> None:
        self.is_shut_down = True


def _assistant_turns(prompt_text: str) -> int:
    return max(0, prompt_text.count("<|im_start|>assistant") - 1)


def install(monkeypatch: Any) -> type[AsyncLLM]:
    """Put the stand-in modules into sys.modules for the duration of a test; returns the engine class."""
    AsyncLLM.instances = []
    names = ("vllm", "vllm.engine", "vllm.engine.arg_utils", "vllm.v1", "vllm.v1.engine", "vllm.v1.engine.async_llm")
    modules = {name: types.ModuleType(name) for name in (*names, "vllm.sampling_params")}
    modules["vllm.engine.arg_utils"].AsyncEngineArgs = AsyncEngineArgs
    modules["vllm.v1.engine.async_llm"].AsyncLLM = AsyncLLM
    modules["vllm.sampling_params"].SamplingParams = SamplingParams
    modules["vllm.sampling_params"].RequestOutputKind = RequestOutputKind
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return AsyncLLM
