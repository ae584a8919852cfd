"""`vllm` policy: vLLM's async engine in-process (optional extra `swerl-cli[vllm]`, GPU only, imported lazily).

Every episode's request goes to one `AsyncLLM` engine as soon as it is made, so the concurrent episodes of a collect
run are batched continuously on the GPU (a turn that ends early frees its slot at once); nothing waits on a lock.
Prompts are rendered with the checkpoint's chat template to token ids here, so the record's `prompt_token_ids` are
exactly what the engine saw, and the sampled ids and their logprobs come back from the engine unchanged.
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from swerl_cli.core.config import flag
from swerl_cli.core.errors import ConfigError, PolicyError, require_modules
from swerl_cli.core.model_dir import check_model_dir, load_tokenizer
from swerl_cli.policy import PolicyBackend, PolicyOptions
from swerl_cli.policy.base import Completion, ContextLimitError, EpisodeInfo, Sampling, identity, reply_budget
from swerl_cli.policy.engine_size import KV_ENV, kv_cache_gib, max_positions, sampler_dtype, whole_prefills
from swerl_cli.policy.flags import DTYPE, MODEL, POLICY_VERSION
from swerl_cli.policy.tokens import TurnPrompter
from swerl_cli.policy.turns import finish_turn, local_prompter, parse_tool_calls
from swerl_cli.policy.waiting import announced


@dataclass(frozen=True, slots=True)
class VLLMOptions(PolicyOptions):
    """The checkpoint, the GPU flags, the sampler dtype, the episode budget and concurrency the engine is sized
    for, and any other `AsyncEngineArgs` field (`vllm_engine_args`, YAML only)."""

    model: str | None = flag(None, MODEL)
    policy_version: str | None = flag(None, POLICY_VERSION)
    dtype: str = flag("auto", DTYPE)
    tensor_parallel_size: int = flag(1, "GPUs per vLLM engine (vllm policy).")
    gpu_memory_utilization: float = flag(0.9, "Share of GPU memory vLLM may take (vllm policy).")
    # collect's own settings, which the engine is sized by (their defaults there are collect's)
    max_context_tokens: int = 65536
    concurrency: int = 1
    vllm_engine_args: Mapping[str, Any] | None = None


class VLLMPolicy(PolicyBackend):
    """One vLLM `AsyncLLM` engine built from `AsyncEngineArgs(model=..., **engine_kwargs)` on first use."""

    name = "vllm"
    Options = VLLMOptions

    @classmethod
    def create(cls, options: VLLMOptions) -> VLLMPolicy:
        """A local `--model` is checked as a model directory first, then that vLLM is installed; no engine starts
        before the first request."""
        if options.model:
            check_model_dir(options.model)
        require_modules("vllm")  # a missing vLLM stops the run before any episode, with its install command
        return cls(
            options.model or "",
            version=options.policy_version,
            engine_kwargs=cls.engine_args(options),
            concurrency=options.concurrency,
            max_context=options.max_context_tokens,
        )

    @staticmethod
    def engine_args(options: VLLMOptions) -> dict[str, Any]:
        """The GPU flags, the sampler dtype (the trainer's unless --dtype says), a context no longer than the
        checkpoint's or the episode budget and, on CPU, whole prefills; then any `vllm_engine_args` from YAML."""
        engine: dict[str, Any] = dict(
            tensor_parallel_size=options.tensor_parallel_size,
            gpu_memory_utilization=options.gpu_memory_utilization,
            dtype=sampler_dtype(options.dtype),
        )
        limit = max_positions(options.model or "")
        if limit:
            engine["max_model_len"] = min(options.max_context_tokens, limit)
        engine.update(options.vllm_engine_args or {})
        for key, value in whole_prefills(engine.get("max_model_len", options.max_context_tokens)).items():
            engine.setdefault(key, value)  # what YAML says wins
        return engine

    def __init__(
        self,
        model: str,
        *,
        version: str | None = None,
        engine_kwargs: dict[str, Any] | None = None,
        concurrency: int = 1,
        max_context: int | None = None,
    ):
        if not model:
            raise ConfigError("the vllm policy needs --model (a save_pretrained directory or hub id)")
        self.model = model
        self.version = version
        self.engine_kwargs = dict(engine_kwargs or {})
        self.concurrency = concurrency
        self.max_context = max_context
        self.kv_cache_gib: int | None = None
        self._engine: Any = None
        self._tok: Any = None
        self._prompter: TurnPrompter | None = None
        self._request_ids = itertools.count()

    def describe(self) -> dict[str, Any]:
        """The `policy` record fields."""
        return {
            **identity(self.name, self.model, self.version),
            "engine_args": dict(self.engine_kwargs),
            **({"kv_cache_gib": self.kv_cache_gib} if self.kv_cache_gib is not None else {}),
        }

    def size_kv_cache(self) -> None:
        """Set VLLM_CPU_KVCACHE_SPACE (unless the user did) to what `concurrency` sequences of the engine's context
        need; the engine's processes inherit it. GPU builds ignore the variable."""
        if os.environ.get(KV_ENV):
            self.kv_cache_gib = None
            return
        tokens = self.engine_kwargs.get("max_model_len") or self.max_context or max_positions(self.model)
        dtype = sampler_dtype(self.engine_kwargs.get("dtype"))
        gib = kv_cache_gib(self.model, int(tokens), self.concurrency, dtype) if tokens else None
        if gib is not None:
            os.environ[KV_ENV] = str(gib)
            self.kv_cache_gib = gib
            sys.stderr.write(
                f"swerl vllm: KV cache {gib} GiB ({KV_ENV}) for {self.concurrency} x {tokens} tokens in {dtype}\n"
            )

    def _start(self) -> None:
        """Build the engine and tokenizer (inside the running event loop: the engine's output task lives there)."""
        if self._engine is not None:
            return
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        self._tok = load_tokenizer(self.model, PolicyError)
        self._prompter = local_prompter(self._tok)
        self.size_kv_cache()
        key = f"vllm:{os.path.abspath(self.model) if os.path.isdir(self.model) else self.model}"
        try:
            with announced(f"swerl vllm: starting the engine for {self.model}", key=key):
                self._engine = AsyncLLM.from_engine_args(AsyncEngineArgs(model=self.model, **self.engine_kwargs))
        except (TypeError, ValueError, RuntimeError) as e:
            raise PolicyError(f"cannot start vLLM for {self.model}: {str(e).splitlines()[0]}") from None

    def sampling_params(self, sampling: Sampling, max_new: int) -> Any:
        """vLLM SamplingParams with every knob explicit (no generation-config defaults), the sampled token's
        logprob per position, and only the final output delivered."""
        from vllm.sampling_params import RequestOutputKind, SamplingParams

        return SamplingParams(
            n=1,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            top_k=sampling.top_k,
            min_p=sampling.min_p,
            repetition_penalty=sampling.repetition_penalty,
            max_tokens=max_new,
            seed=sampling.seed,
            logprobs=0,
            stop=list(sampling.stop) or None,
            skip_special_tokens=True,
            output_kind=RequestOutputKind.FINAL_ONLY,
        )

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        sampling: Sampling,
        *,
        tools: list[dict[str, Any]] | None = None,
        episode: EpisodeInfo | None = None,
    ) -> Completion:
        """Submit one request to the shared engine and await its final output."""
        self._start()
        t0 = time.perf_counter()
        assert self._prompter is not None
        state = episode.tokens if episode is not None else None
        tp = await self._prompter.build(messages, tools, state)
        prompt = tp.ids
        max_new = reply_budget(len(prompt), sampling, episode.max_context_tokens if episode is not None else None)
        rid = f"swerl-{next(self._request_ids)}"
        if episode is not None:
            rid += f"-{episode.instance_id}-{episode.sample}"
        final = None
        try:
            async for out in self._engine.generate(
                {"prompt_token_ids": prompt}, self.sampling_params(sampling, max_new), rid
            ):
                final = out
        except ValueError as e:  # vLLM rejects prompts longer than max_model_len with a ValueError
            text = str(e)
            if "longer than the maximum model length" in text or "max_model_len" in text:
                raise ContextLimitError(f"prompt of {len(prompt)} tokens: {text.splitlines()[0]}") from None
            raise PolicyError(f"vLLM rejected the request: {text.splitlines()[0]}") from None
        except Exception as e:  # a dead engine (EngineDeadError) fails the episode as an error record, not the run
            if type(e).__name__ not in ("EngineDeadError", "EngineGenerateError"):
                raise
            raise PolicyError(f"vLLM engine failed: {(str(e).splitlines() or [type(e).__name__])[0]}") from None
        if final is None or not final.outputs:
            raise PolicyError(f"vLLM returned no output for request {rid}")
        comp = completion_from_output(final.outputs[0], prompt, tools, time.perf_counter() - t0)
        return finish_turn(comp, tp, state)

    async def aclose(self) -> None:
        """Shut the engine down (its worker processes exit)."""
        if self._engine is not None:
            self._engine.shutdown()
            self._engine = None


def completion_from_output(out: Any, prompt: list[int], tools: Any, latency_s: float) -> Completion:
    """A Completion from a vLLM CompletionOutput: ids as sampled, each one's logprob from the per-position dicts."""
    ids = list(out.token_ids)
    steps = out.logprobs or []
    logprobs = [float(step[t].logprob) for step, t in zip(steps, ids, strict=False)] if steps else None
    if logprobs is not None and len(logprobs) != len(ids):
        logprobs = None  # misaligned: keep ids exact rather than guess
    finish = "length" if out.finish_reason == "length" else "stop"
    calls = parse_tool_calls(out.text) if tools else None
    return Completion(
        text=out.text,
        token_ids=ids,
        logprobs=logprobs,
        finish_reason="tool_calls" if calls else finish,
        prompt_token_ids=prompt,
        tool_calls=calls,
        usage={"prompt_tokens": len(prompt), "completion_tokens": len(ids)},
        latency_s=latency_s,
    )
