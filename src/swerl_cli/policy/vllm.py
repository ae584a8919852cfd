"""`vllm` policy: the offline vLLM engine in-process (optional extra `swerl[vllm]`, GPU only, imported lazily)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from swerl_cli.errors import ConfigError, PolicyError
from swerl_cli.policy.base import Completion, ContextLimitError, EpisodeInfo, Sampling


class VLLMPolicy:
    """One `vllm.LLM` engine; prompts are rendered with its tokenizer's chat template, ids and logprobs exact."""

    name = "vllm"

    def __init__(self, model: str, *, version: str | None = None, engine_kwargs: dict[str, Any] | None = None):
        if not model:
            raise ConfigError("the vllm policy needs --model (a save_pretrained directory or hub id)")
        self.model = model
        self.version = version
        self.engine_kwargs = engine_kwargs or {}
        self._llm: Any = None
        self._lock = threading.Lock()

    def describe(self) -> dict[str, Any]:
        """The `policy` record fields."""
        return {"backend": self.name, "model": self.model, "version": self.version or self.model}

    def _engine(self) -> Any:
        if self._llm is None:
            try:
                from vllm import LLM
            except ImportError:
                raise PolicyError("the vllm backend needs vLLM on a GPU host: pip install 'swerl[vllm]'") from None
            self._llm = LLM(model=self.model, **self.engine_kwargs)
        return self._llm

    def _generate(self, messages: list[dict[str, Any]], sampling: Sampling, tools: Any, max_context: int | None):
        from vllm import SamplingParams

        from swerl_cli.policy.hf import render_ids

        with self._lock:
            llm = self._engine()
            t0 = time.perf_counter()
            prompt = render_ids(llm.get_tokenizer(), messages, add_generation_prompt=True, tools=tools)
            max_new = sampling.max_new_tokens
            if max_context is not None:
                max_new = min(max_new, max_context - len(prompt))
                if max_new <= 0:
                    raise ContextLimitError(f"prompt of {len(prompt)} tokens fills the context of {max_context}")
            params = SamplingParams(
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                top_k=sampling.top_k,
                min_p=sampling.min_p,
                repetition_penalty=sampling.repetition_penalty,
                max_tokens=max_new,
                seed=sampling.seed,
                logprobs=0,
                stop=list(sampling.stop) or None,
            )
            out = llm.generate([{"prompt_token_ids": prompt}], params, use_tqdm=False)[0].outputs[0]
            ids = list(out.token_ids)
            logprobs = [float(step[t].logprob) for step, t in zip(out.logprobs or [], ids, strict=False)] or None
            finish = "length" if out.finish_reason == "length" else "stop"
            return Completion(
                text=out.text,
                token_ids=ids,
                logprobs=logprobs,
                finish_reason=finish,
                prompt_token_ids=prompt,
                latency_s=time.perf_counter() - t0,
            )

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        sampling: Sampling,
        *,
        tools: list[dict[str, Any]] | None = None,
        episode: EpisodeInfo | None = None,
    ) -> Completion:
        """Generate in a worker thread; the engine serialises requests."""
        max_context = episode.max_context_tokens if episode is not None else None
        return await asyncio.to_thread(self._generate, messages, sampling, tools, max_context)

    async def aclose(self) -> None:
        """Release the engine."""
        self._llm = None
