"""`hf` policy: a local transformers checkpoint (the CPU path the tests use); exact token ids and logprobs.

The chat template renders the prompt (add_generation_prompt=True), `generate` samples with every parameter
explicit (the checkpoint's generation_config cannot leak in), and the sampled tokens' logprobs come from the raw
logits (log-softmax before temperature or truncation, as vLLM's default raw logprobs). generate runs in a worker
thread under a lock: one model serves many concurrent episodes while asyncio stays responsive.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swerl_cli.core.config import flag
from swerl_cli.core.errors import ConfigError, PolicyError, require_modules
from swerl_cli.core.model_dir import check_model_dir, load_tokenizer
from swerl_cli.policy import PolicyBackend, PolicyOptions
from swerl_cli.policy.base import Completion, EpisodeInfo, Sampling, identity, reply_budget
from swerl_cli.policy.checks import require_device
from swerl_cli.policy.engine_size import sampler_dtype
from swerl_cli.policy.flags import DTYPE, MODEL, POLICY_VERSION
from swerl_cli.policy.tokens import TurnPrompter
from swerl_cli.policy.turns import finish_turn, local_prompter, parse_tool_calls


def _require_model_dir(model: str, error: type[Exception]) -> None:
    """A model name that looks like a path must be a directory (not left to transformers' hub-id message)."""
    if model.startswith((".", "/", "~")) and not os.path.isdir(os.path.expanduser(model)):
        raise error(f"--model {model}: no such model directory (expected a save_pretrained dir or a hub name)")


def forward_logprobs(model: str, ids: list[int]) -> list[float]:
    """log p(ids[i] | ids[:i]) for i >= 1 from one fp32 forward pass of checkpoint `model` (the trainer's view)."""
    import torch
    from transformers import AutoModelForCausalLM

    m = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).eval()
    with torch.no_grad():
        lps = torch.log_softmax(m(torch.tensor([ids])).logits[0, :-1].float(), dim=-1)
    return [float(lps[i, t]) for i, t in enumerate(ids[1:])]


@dataclass(frozen=True, slots=True)
class HFOptions(PolicyOptions):
    """`--model`, `--device`, `--dtype` (the sampler's; auto = the trainer's) and `--policy-version`."""

    model: str | None = flag(None, MODEL)
    device: str = flag("cpu", "Device of the hf policy (cpu, cuda, cuda:N).")
    dtype: str = flag("auto", DTYPE)  # the sampler's
    policy_version: str | None = flag(None, POLICY_VERSION)


class HFPolicy(PolicyBackend):
    """transformers `generate` on one local model; returns exact prompt ids, sampled ids and their logprobs."""

    name = "hf"
    Options = HFOptions

    @classmethod
    def create(cls, options: HFOptions) -> HFPolicy:
        """A local `--model` is checked as a model directory first, then the packages are (the install line)."""
        if options.model:
            check_model_dir(options.model)
        require_modules("torch", "transformers")  # missing: the run stops before any episode, with the install line
        require_device(options.device)  # `--device cuda` on a machine without CUDA: one line before any episode
        return cls(options.model or "", device=options.device, version=options.policy_version, dtype=options.dtype)

    def __init__(self, model: str, *, device: str = "cpu", version: str | None = None, dtype: str = "auto"):
        if not model:
            raise ConfigError("the hf policy needs --model PATH (a save_pretrained directory)")
        _require_model_dir(model, ConfigError)  # fail before any episode starts, not once per episode
        self.model_path = model
        self.device = device
        self.dtype = sampler_dtype(dtype, device)
        self.version = version
        self._tok: Any = None
        self._model: Any = None
        self._eos: set[int] = set()
        self._thread_lock = threading.Lock()
        self._lock: asyncio.Lock | None = None
        self._prompter: TurnPrompter | None = None

    def describe(self) -> dict[str, Any]:
        """The `policy` record fields."""
        version = self.version or str(
            Path(self.model_path).resolve() if Path(self.model_path).exists() else self.model_path
        )
        return {
            **identity(self.name, self.model_path, version),
            "device": self.device,
            "dtype": self.dtype,
        }

    def _load(self) -> None:
        if self._model is not None:
            return
        import torch
        from transformers import AutoModelForCausalLM

        self._tok = load_tokenizer(self.model_path, PolicyError)
        try:
            model = AutoModelForCausalLM.from_pretrained(self.model_path, dtype=getattr(torch, self.dtype))
        except (OSError, ValueError) as e:
            raise PolicyError(f"cannot load model {self.model_path}: {str(e).splitlines()[0]}") from None
        self._model = model.to(self.device).eval()
        eos = model.generation_config.eos_token_id
        self._eos = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self._tok.eos_token_id is not None:
            self._eos.add(int(self._tok.eos_token_id))

    def _generate(self, prompt: list[int], sampling: Sampling, tools: Any, max_context: int | None) -> Completion:
        import torch

        with self._thread_lock:
            t0 = time.perf_counter()
            max_new = reply_budget(len(prompt), sampling, max_context)
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)
            pad = self._tok.pad_token_id if self._tok.pad_token_id is not None else min(self._eos, default=0)
            greedy = sampling.temperature <= 0
            with torch.no_grad():
                out = self._model.generate(
                    torch.tensor([prompt], device=self.device),
                    attention_mask=torch.ones(1, len(prompt), dtype=torch.long, device=self.device),
                    do_sample=not greedy,
                    temperature=None if greedy else sampling.temperature,
                    top_p=None if greedy else sampling.top_p,
                    top_k=None if greedy else max(sampling.top_k, 0),
                    min_p=None if greedy or sampling.min_p <= 0 else sampling.min_p,
                    repetition_penalty=sampling.repetition_penalty,
                    max_new_tokens=max_new,
                    eos_token_id=sorted(self._eos) or None,
                    pad_token_id=pad,
                    return_dict_in_generate=True,
                    output_logits=True,
                )
            ids = out.sequences[0, len(prompt) :].tolist()
            logits = torch.stack(out.logits, dim=0)[:, 0, :].float()  # (new, V) raw logits
            lps = torch.log_softmax(logits, dim=-1)
            ids = _cut_after_eos(ids, self._eos)
            logprobs = [float(lps[i, t]) for i, t in enumerate(ids)]
            finish = "stop" if ids and ids[-1] in self._eos else "length"
            body = ids[:-1] if finish == "stop" else ids
            text = self._tok.decode(body, skip_special_tokens=True)
            calls = parse_tool_calls(text) if tools else None
            return Completion(
                text=text,
                token_ids=ids,
                logprobs=logprobs,
                finish_reason="tool_calls" if calls else finish,
                tool_calls=calls,
                usage={"prompt_tokens": len(prompt), "completion_tokens": len(ids)},
                latency_s=time.perf_counter() - t0,
            )

    def _load_locked(self) -> None:
        with self._thread_lock:
            self._load()

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        sampling: Sampling,
        *,
        tools: list[dict[str, Any]] | None = None,
        episode: EpisodeInfo | None = None,
    ) -> Completion:
        """Build the prompt token-in/token-out, then sample one turn in a worker thread (one generate at a time)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        if self._model is None:
            await asyncio.to_thread(self._load_locked)
        if self._prompter is None:
            self._prompter = local_prompter(self._tok)
        state = episode.tokens if episode is not None else None
        tp = await self._prompter.build(messages, tools, state)
        max_context = episode.max_context_tokens if episode is not None else None
        async with self._lock:
            comp = await asyncio.to_thread(self._generate, tp.ids, sampling, tools, max_context)
        return finish_turn(comp, tp, state)

    async def aclose(self) -> None:
        """Drop the model."""
        self._model = None


def _cut_after_eos(ids: list[int], eos: set[int]) -> list[int]:
    for i, t in enumerate(ids):
        if t in eos:
            return ids[: i + 1]
    return ids
