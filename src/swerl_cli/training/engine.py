"""TrainEngine: a transformers causal LM under DeepSpeed ZeRO, shared by `swerl rft` and `swerl dapo`.

Public API (what the DAPO loop builds on):

    eng = TrainEngine.from_config(EngineConfig.from_stage(cfg, model=path), total_steps=n)
    logp = eng.forward_logprobs(batch)            # (1, T): log p(input_ids[t] | <t), 0.0 at each sample's first token
    stats = eng.train_step(micro_batches, loss_fn) # one optimizer step over this rank's packed micro-batches
    eng.save_checkpoint(dir, step, client_state)   # resumable DeepSpeed checkpoint (all ranks call it)
    step, state = eng.load_checkpoint(dir)         # latest one, or (0, {}) when none
    eng.export(out_dir, run_config)                # save_pretrained dir (ZeRO-3 consolidated) + tokenizer + config

`loss_fn(logp, batch) -> (loss, stats)` returns this micro-batch's share of the global objective (sum over its
tokens divided by the normaliser of the whole optimizer step, over all ranks) and a dict of float sums. The engine
undoes DeepSpeed's data-parallel gradient averaging (multiplies by world size), so gradients equal those of the
global objective whatever the number of ranks and micro-batches. Every rank must call `train_step` with the same
number of micro-batches (pad with `collate([])`), as ZeRO's collectives run per forward/backward.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swerl_cli.errors import ConfigError, SwerlError
from swerl_cli.training import dist

RUN_CONFIG_FILE = "swerl_run_config.json"
LOGIT_CHUNK = 4096  # tokens per lm_head chunk: bounds the fp32 (T, V) logits at 65k context


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Engine knobs; `from_stage` picks the same-named fields from RftConfig or DapoConfig."""

    model: str
    zero_stage: int = 2
    offload: bool = False
    gradient_checkpointing: bool = False
    lr: float = 5e-6
    weight_decay: float = 0.1
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    grad_clip: float = 1.0
    warmup_steps: int = 0
    lr_schedule: str = "constant"  # constant | cosine (to 0 at the last step)
    seed: int = 0
    dtype: str = "auto"  # auto: bf16 on CUDA, fp32 on CPU
    attn_implementation: str = "sdpa"

    def __post_init__(self) -> None:
        if self.zero_stage not in (0, 1, 2, 3):
            raise ConfigError(f"engine: field 'zero_stage': must be 0-3, got {self.zero_stage}; use 2 or 3")
        if self.lr_schedule not in ("constant", "cosine"):
            raise ConfigError(f"engine: field 'lr_schedule': constant or cosine, got {self.lr_schedule!r}")
        if self.dtype not in ("auto", "bf16", "fp32"):
            raise ConfigError(f"engine: field 'dtype': auto, bf16 or fp32, got {self.dtype!r}")

    @classmethod
    def from_stage(cls, cfg: Any, **overrides: Any) -> EngineConfig:
        """Build from any stage config carrying some of these field names (missing ones keep defaults)."""
        names = {f.name for f in dataclasses.fields(cls)}
        values = {n: getattr(cfg, n) for n in names if hasattr(cfg, n)}
        values.update(overrides)
        return cls(**values)


def lr_lambda(warmup_steps: int, total_steps: int, schedule: str):
    """Multiplier per step: linear warmup over `warmup_steps`, then constant or cosine decaying to 0."""

    def f(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        if schedule == "constant":
            return 1.0
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    return f


def _check_local(name: str) -> None:
    """A name that looks like a path must exist: say so plainly instead of transformers' hub-id complaint."""
    import os

    if (name.startswith((".", "/", "~")) or name.count("/") > 1) and not (os.path.isdir(os.path.expanduser(name))):
        raise ConfigError(f"--model {name}: no such model directory (expected a save_pretrained dir or a hub name)")


def load_tokenizer(name: str) -> Any:
    """The tokenizer of `--model`, loaded the way the engine loads it; one-line error if it cannot be."""
    from transformers import AutoTokenizer

    _check_local(name)
    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConfigError(f"--model {name}: cannot load a tokenizer: {first}") from None


def load_model_and_tokenizer(name: str, dtype: Any, attn_implementation: str):
    """Load any causal LM + tokenizer from a local save_pretrained dir or a hub name; one-line error if it fails."""
    from transformers import AutoModelForCausalLM

    tok = load_tokenizer(name)
    try:
        model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype, attn_implementation=attn_implementation)
    except (OSError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConfigError(f"--model {name}: cannot load a causal LM and tokenizer: {first}") from None
    return model, tok


class TrainEngine:
    """A DeepSpeed-wrapped model with its tokenizer; see the module docstring for the contract."""

    def __init__(self, engine: Any, tokenizer: Any, cfg: EngineConfig, device: str):
        self.engine, self.tokenizer, self.cfg, self.device = engine, tokenizer, cfg, device
        self.rank, self.world_size = dist.rank(), dist.world_size()

    @classmethod
    def from_config(cls, cfg: EngineConfig, total_steps: int) -> TrainEngine:
        """Start the process group, load the model, wrap it in DeepSpeed with AdamW and the lr schedule."""
        import deepspeed
        import torch

        device = dist.init()
        bf16 = cfg.dtype == "bf16" or (cfg.dtype == "auto" and device.startswith("cuda"))
        torch.manual_seed(cfg.seed)
        model, tok = load_model_and_tokenizer(
            cfg.model, torch.bfloat16 if bf16 else torch.float32, cfg.attn_implementation
        )
        model.config.use_cache = False
        if cfg.gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        params = [p for p in model.parameters() if p.requires_grad]
        betas = (cfg.adam_beta1, cfg.adam_beta2)
        if cfg.offload and device.startswith("cuda"):
            from deepspeed.ops.adam import DeepSpeedCPUAdam

            opt = DeepSpeedCPUAdam(params, lr=cfg.lr, betas=betas, eps=cfg.adam_eps, weight_decay=cfg.weight_decay)
        else:  # a client torch optimizer avoids DeepSpeed's FusedAdam JIT build on CPU
            opt = torch.optim.AdamW(params, lr=cfg.lr, betas=betas, eps=cfg.adam_eps, weight_decay=cfg.weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(cfg.warmup_steps, total_steps, cfg.lr_schedule))
        ds_cfg = ds_config(cfg, dist.world_size(), bf16)
        wrapped = logprob_module(model)
        engine, _, _, _ = deepspeed.initialize(model=wrapped, optimizer=opt, lr_scheduler=sched, config=ds_cfg)
        return cls(engine, tok, cfg, device)

    @property
    def unmanaged_accumulation(self) -> bool:
        """True when DeepSpeed lets step() own the accumulation boundary (needed for exact ZeRO-3 accumulation)."""
        return hasattr(self.engine, "managed_gradient_accumulation") and not self.engine.managed_gradient_accumulation()

    @property
    def module(self) -> Any:
        """The wrapped transformers model."""
        return self.engine.module.lm

    def forward_logprobs(self, batch: Any) -> Any:
        """Per-token log-probs (1, T) of a packed batch under the wrapped model (with grad)."""
        b = batch.to(self.device)
        return self.engine(b.input_ids, b.position_ids)

    def train_step(self, micro_batches: list[Any], loss_fn: Any) -> dict[str, float]:
        """Forward/backward each micro-batch, one optimizer step; returns summed loss_fn stats, lr, grad norm."""
        totals: dict[str, float] = {}
        lr = float(self.engine.optimizer.param_groups[0]["lr"])
        unmanaged = self.unmanaged_accumulation
        for i, mb in enumerate(micro_batches):
            if not unmanaged:
                self.engine.set_gradient_accumulation_boundary(i == len(micro_batches) - 1)
            logp = self.forward_logprobs(mb)
            loss, stats = loss_fn(logp, mb.to(self.device))
            self.engine.backward(loss * self.world_size, scale_wrt_gas=False)
            if not unmanaged:
                self.engine.step()
            for k, v in stats.items():
                totals[k] = totals.get(k, 0.0) + float(v)
        if unmanaged:  # the caller owns the boundary: step() reduces the accumulated grads and updates once
            self.engine.step()
        keys = sorted(totals)
        summed = dist.all_reduce_sum([totals[k] for k in keys], self.device)
        out = dict(zip(keys, summed, strict=True))
        norm = self.engine.get_global_grad_norm()
        out["grad_norm"] = float(norm) if norm is not None else float("nan")
        out["lr"] = lr
        return out

    def save_checkpoint(self, ckpt_dir: Path, step: int, client_state: dict[str, Any], keep: int = 2) -> None:
        """Resumable DeepSpeed checkpoint tagged step-N (collective: every rank calls it); keeps the last `keep`."""
        ckpt_dir = Path(ckpt_dir)
        self.engine.save_checkpoint(str(ckpt_dir), tag=f"step-{step}", client_state={**client_state, "step": step})
        dist.barrier()
        if dist.is_main() and keep > 0:
            tags = sorted((p for p in ckpt_dir.glob("step-*") if p.is_dir()), key=lambda p: int(p.name[5:]))
            for old in tags[:-keep]:
                shutil.rmtree(old, ignore_errors=True)

    def load_checkpoint(self, ckpt_dir: Path) -> tuple[int, dict[str, Any]]:
        """Load the latest DeepSpeed checkpoint under `ckpt_dir`; (0, {}) when there is none."""
        ckpt_dir = Path(ckpt_dir)
        if not (ckpt_dir / "latest").is_file():
            return 0, {}
        path, state = self.engine.load_checkpoint(str(ckpt_dir))
        if path is None:
            raise SwerlError(f"{ckpt_dir}: DeepSpeed checkpoint could not be loaded")
        return int(state.get("step", 0)), dict(state)

    def export(self, out_dir: Path, run_config: dict[str, Any]) -> Path:
        """Write a save_pretrained directory (weights consolidated under ZeRO-3), tokenizer and run config."""
        out_dir = Path(out_dir)
        if self.cfg.zero_stage == 3:
            state = self.engine._zero3_consolidated_16bit_state_dict()  # collective; full dict on rank 0
        else:
            state = self.engine.module.state_dict() if dist.is_main() else None
        if state is not None:
            state = {k.removeprefix("lm."): v for k, v in state.items()}
        if dist.is_main():
            out_dir.mkdir(parents=True, exist_ok=True)
            self.module.save_pretrained(out_dir, state_dict=state, safe_serialization=True)
            self.tokenizer.save_pretrained(out_dir)
            (out_dir / RUN_CONFIG_FILE).write_text(json.dumps(run_config, indent=2, default=str) + "\n")
        dist.barrier()
        return out_dir


def logprob_module(model: Any) -> Any:
    """Wrap a causal LM so its top-level forward returns packed per-token logprobs (1, T).

    DeepSpeed must run the top-level module's forward (ZeRO-3 resets its parameter-fetch state in that module's
    hooks; calling submodules directly silently dropped gradients under accumulation). The wrapper makes the
    chunked-logprob computation that top-level forward.
    """
    import torch

    class LogprobLM(torch.nn.Module):
        def __init__(self, lm: Any):
            super().__init__()
            self.lm = lm

        def forward(self, input_ids: Any, position_ids: Any) -> Any:
            return _logprobs(self.lm, input_ids, position_ids)

    return LogprobLM(model)


def packed_logprobs(model: Any, batch: Any, device: str = "cpu") -> Any:
    """log p(input_ids[t] | <t) as (1, T), 0.0 at each sample's first token; lm_head in checkpointed chunks."""
    b = batch.to(device)
    return _logprobs(model, b.input_ids, b.position_ids)


def _logprobs(model: Any, input_ids: Any, position_ids: Any) -> Any:
    import torch
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    # position_ids restarting at 0 make transformers build a block-diagonal causal mask (no cross-sample attention);
    # use_cache=False is required for that detection.
    hidden = model.base_model(input_ids=input_ids, position_ids=position_ids, use_cache=False)
    h = hidden.last_hidden_state[:, :-1]  # (1, T-1, H): position t predicts token t+1
    targets = input_ids[:, 1:]  # (1, T-1)
    head = model.get_output_embeddings()

    def chunk_logp(hc: Any, tc: Any) -> Any:
        logits = head(hc).float()  # (1, C, V) in fp32
        return -F.cross_entropy(logits.transpose(1, 2), tc, reduction="none")  # (1, C)

    n = h.shape[1]
    if n <= LOGIT_CHUNK:
        logp = chunk_logp(h, targets)
    else:  # never hold (T, V) fp32 logits at once: recompute each chunk in backward
        parts = [
            checkpoint(chunk_logp, h[:, i : i + LOGIT_CHUNK], targets[:, i : i + LOGIT_CHUNK], use_reentrant=False)
            for i in range(0, n, LOGIT_CHUNK)
        ]
        logp = torch.cat(parts, dim=1)
    logp = torch.cat([torch.zeros_like(logp[:, :1]), logp], dim=1)  # (1, T)
    return logp * (position_ids > 0)


def ds_config(cfg: EngineConfig, world_size: int, bf16: bool) -> dict[str, Any]:
    """The DeepSpeed config: micro-batch 1 (one packed row), accumulation driven by train_step's boundary flag."""
    zero: dict[str, Any] = {"stage": cfg.zero_stage}
    if cfg.zero_stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True
    if cfg.offload and cfg.zero_stage >= 2:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        if cfg.zero_stage == 3:
            zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    return {
        "train_micro_batch_size_per_gpu": 1,
        "gradient_accumulation_steps": 1,
        "train_batch_size": world_size,
        "gradient_clipping": cfg.grad_clip,
        "zero_optimization": zero,
        # A variable number of packed micro-batches per step: train_step calls step() once per optimizer step.
        "managed_gradient_accumulation": False,
        "bf16": {"enabled": bf16},
        "zero_allow_untested_optimizer": True,
        "zero_force_ds_cpu_optimizer": False,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }
