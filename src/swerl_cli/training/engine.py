"""TrainEngine: a transformers causal LM under DeepSpeed ZeRO, shared by `swerl rft` and `swerl dapo`.

Public API (what the DAPO loop builds on):

    eng = TrainEngine.from_config(cfg, total_steps=n, tokenizer=tok)   # cfg: any TrainConfig (rft's, dapo's)
    logp = eng.forward_logprobs(batch)            # (1, T): log p(input_ids[t] | <t) on trainable tokens, else 0.0
    stats = eng.train_step(micro_batches, loss_fn) # one optimizer step over this rank's packed micro-batches
    eng.save_checkpoint(dir, step, client_state)   # resumable DeepSpeed checkpoint (all ranks call it)
    step, state = eng.load_checkpoint(dir)         # latest one, or (0, {}) when none
    eng.export(out_dir, run_config)                # save_pretrained dir (ZeRO-3 consolidated) + tokenizer + config

`loss_fn(logp, batch) -> (loss, stats)` returns this micro-batch's share of the global objective (sum over its
tokens divided by the normaliser of the whole optimizer step, over all ranks) and a dict of float sums. The engine
undoes DeepSpeed's data-parallel gradient averaging (multiplies by the data-parallel size, world / SP), so gradients
equal those of the global objective whatever the number of ranks and micro-batches. Every rank must call
`train_step` with the same number of micro-batches (`batching.rank_micro_batches` pads with empty rows), as ZeRO's
collectives run per forward/backward.

Sequence parallelism (`sequence_parallel` N > 1, sequence_parallel.py): a group of N consecutive ranks trains one
data-parallel share. The lm_head is a fused, chunked logprob (logprobs.py) that skips positions whose next token
carries no loss.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

from swerl_cli.core.errors import ConfigError, SwerlError, first_line
from swerl_cli.training import dist
from swerl_cli.training.checkpoint import RUN_CONFIG_FILE
from swerl_cli.training.train_config import TrainConfig


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


def load_model(name: str, dtype: Any, attn_implementation: str) -> Any:
    """Any causal LM from a local save_pretrained dir or a hub name; one-line error if it fails."""
    from transformers import AutoModelForCausalLM

    try:
        return AutoModelForCausalLM.from_pretrained(name, dtype=dtype, attn_implementation=attn_implementation)
    except (OSError, ValueError) as e:
        first = first_line(e)
        raise ConfigError(f"--model {name}: cannot load a causal LM: {first}") from None


class TrainEngine:
    """A DeepSpeed-wrapped model with its tokenizer; see the module docstring for the contract."""

    def __init__(self, engine: Any, tokenizer: Any, cfg: TrainConfig, device: str, sp_group: Any = None):
        self.engine, self.tokenizer, self.cfg, self.device = engine, tokenizer, cfg, device
        self.rank, self.world_size = dist.rank(), dist.world_size()
        self.sp = cfg.sequence_parallel
        self.sp_group = sp_group
        self.sp_rank = self.rank % self.sp
        self.dp_world = self.world_size // self.sp  # data-parallel ranks: each SP group trains one share

    @property
    def dp_rank(self) -> int:
        """This rank's data-parallel index (SP groups are consecutive ranks)."""
        return self.rank // self.sp

    @classmethod
    def from_config(cls, cfg: TrainConfig, total_steps: int, tokenizer: Any = None) -> TrainEngine:
        """Start the process group, load `cfg.model`, wrap it in DeepSpeed with AdamW and the lr schedule.

        `tokenizer`: the one the caller already loaded for its data (core/model_dir.py's load_tokenizer); loaded
        here when not given.
        """
        import deepspeed
        import torch

        from swerl_cli.core.model_dir import load_tokenizer
        from swerl_cli.training import attention
        from swerl_cli.training.logprobs import logprob_module
        from swerl_cli.training.sequence_parallel import register_ulysses

        device = dist.init()
        world = dist.world_size()
        if world % cfg.sequence_parallel:
            raise ConfigError(
                f"--sequence-parallel {cfg.sequence_parallel} does not divide the {world} ranks: launch a multiple "
                "of it (torchrun --nproc_per_node)"
            )
        bf16 = cfg.dtype == "bf16" or (cfg.dtype == "auto" and device.startswith("cuda"))
        torch.manual_seed(cfg.seed)
        attn = attention.resolve(cfg.attn_implementation, device)
        tok = tokenizer if tokenizer is not None else load_tokenizer(cfg.model)
        model = load_model(cfg.model, torch.bfloat16 if bf16 else torch.float32, attn)
        model.config.use_cache = False
        mpu, sp_group = None, None
        if cfg.sequence_parallel > 1:
            mpu = register_ulysses(model, attn, cfg.sequence_parallel)
            sp_group = mpu.get_sequence_parallel_group()
        if cfg.gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        params = [p for p in model.parameters() if p.requires_grad]
        betas = (cfg.adam_beta1, cfg.adam_beta2)
        if cfg.offload and device.startswith("cuda"):
            from deepspeed.ops.adam import DeepSpeedCPUAdam

            opt = DeepSpeedCPUAdam(params, lr=cfg.lr, betas=betas, eps=cfg.adam_eps, weight_decay=cfg.weight_decay)
        else:  # a client torch optimizer avoids DeepSpeed's FusedAdam JIT build on CPU
            opt = torch.optim.AdamW(
                params, lr=cfg.lr, betas=betas, eps=cfg.adam_eps, weight_decay=cfg.weight_decay,
                fused=fused_adamw(device),
            )  # fmt: skip
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(cfg.warmup_steps, total_steps, cfg.lr_schedule))
        ds_cfg = ds_config(cfg, world, bf16, largest_param=max(p.numel() for p in model.parameters()))
        wrapped = logprob_module(model, zero3=cfg.zero_stage == 3)
        engine, _, _, _ = deepspeed.initialize(model=wrapped, optimizer=opt, lr_scheduler=sched, config=ds_cfg, mpu=mpu)
        # from_pretrained leaves the model in eval mode, where transformers skips gradient checkpointing (and any
        # dropout): training mode, as the Trainer sets it
        engine.train()
        return cls(engine, tok, cfg, device, sp_group)

    @property
    def unmanaged_accumulation(self) -> bool:
        """True when DeepSpeed lets step() own the accumulation boundary (needed for exact ZeRO-3 accumulation)."""
        return hasattr(self.engine, "managed_gradient_accumulation") and not self.engine.managed_gradient_accumulation()

    @property
    def module(self) -> Any:
        """The wrapped transformers model."""
        return self.engine.module.lm

    def forward_logprobs(self, batch: Any) -> Any:
        """Per-token log-probs (1, T) of a packed batch (with grad), 0.0 at each sample's first token.

        Only positions whose token is trainable (`batch.loss_mask`) are computed; the others are 0.0 and cost no
        lm_head work. Under sequence parallelism each rank runs its slice of the row and the logprobs are gathered.
        """
        import torch

        from swerl_cli.training.sequence_parallel import gather_sequence, sp_slice

        b = batch.to(self.device)
        ids, pos = b.input_ids, b.position_ids
        n = ids.shape[1]
        # targets[t] = token t+1 where it is trainable, else -1 (skipped by the fused head)
        want = torch.cat([b.loss_mask[:, 1:] > 0, torch.zeros_like(ids[:, :1], dtype=torch.bool)], dim=1)
        nxt = torch.cat([ids[:, 1:], torch.zeros_like(ids[:, :1])], dim=1)
        targets = torch.where(want, nxt, torch.full_like(nxt, -1))
        if self.sp > 1:
            ids, pos, targets = sp_slice(self.sp, self.sp_rank, ids, pos, targets)
        lp = self.engine(ids, pos, targets)  # (1, n_local): log p(targets[t] | <= t)
        if self.sp > 1:
            lp = gather_sequence(lp, self.sp_group, self.sp_rank)[:, :n]
        return torch.cat([torch.zeros_like(lp[:, :1]), lp[:, :-1]], dim=1)  # aligned to the predicted token

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
            # DeepSpeed averages gradients over the data-parallel ranks (world / SP): undo it, so the update is the
            # gradient of the global objective whatever the split.
            self.engine.backward(loss * self.dp_world, scale_wrt_gas=False)
            if not unmanaged:
                self.engine.step()
            weight = 1.0 if self.sp_rank == 0 else 0.0  # the SP ranks of a group saw the same samples: count once
            for k, v in stats.items():
                totals[k] = totals.get(k, 0.0) + weight * float(v)
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
        ckpt_dir, tag = Path(ckpt_dir), f"step-{step}"
        # DeepSpeed's own `latest` is an open('w') then a write: a SIGTERM between the two (a Python-level handler)
        # left it empty and --resume failed. Ours is written once every rank has saved, and renamed into place.
        state = {**client_state, "step": step}
        self.engine.save_checkpoint(str(ckpt_dir), tag=tag, client_state=state, save_latest=False)
        dist.barrier()
        if dist.is_main():
            (ckpt_dir / "latest.tmp").write_text(tag)
            os.replace(ckpt_dir / "latest.tmp", ckpt_dir / "latest")
            tags = sorted((p for p in ckpt_dir.glob("step-*") if p.is_dir()), key=_step_of)
            for old in tags[:-keep] if keep > 0 else []:
                shutil.rmtree(old, ignore_errors=True)

    def load_checkpoint(self, ckpt_dir: Path) -> tuple[int, dict[str, Any]]:
        """Load the latest DeepSpeed checkpoint under `ckpt_dir`; (0, {}) when there is none."""
        ckpt_dir = Path(ckpt_dir)
        if not (ckpt_dir / "latest").is_file():
            return 0, {}
        tag = (ckpt_dir / "latest").read_text().strip()
        if not tag or not any((ckpt_dir / tag).glob("*model_states.pt")):  # a `latest` older versions left torn
            done = sorted((p for p in ckpt_dir.glob("step-*") if any(p.glob("*model_states.pt"))), key=_step_of)
            if not done:
                raise SwerlError(f"{ckpt_dir}: no complete DeepSpeed checkpoint (latest names {tag!r})")
            tag = done[-1].name
        path, state = self.engine.load_checkpoint(str(ckpt_dir), tag=tag)
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
            model = self.module
            if model.config._attn_implementation != "sdpa":  # the saved config names a standard implementation
                model.config._attn_implementation = "sdpa"
            model.save_pretrained(out_dir, state_dict=state, safe_serialization=True)
            self.tokenizer.save_pretrained(out_dir)
            (out_dir / RUN_CONFIG_FILE).write_text(json.dumps(run_config, indent=2, default=str) + "\n")
        dist.barrier()
        return out_dir


def _step_of(path: Path) -> int:
    """`step-12` -> 12 (a tag directory of save_checkpoint)."""
    return int(path.name.removeprefix("step-"))


def fused_adamw(device: str) -> bool:
    """Whether torch's fused AdamW kernel serves `device` (CPU and CUDA do). On CPU torch's default is a loop of
    elementwise ops: one step over a 135M-parameter flat ZeRO partition took ~1.2 s on 2 cores, ~0.15 s fused
    (transformers' Trainer defaults to the fused kernel since torch 2.8)."""
    return device.split(":")[0] in ("cpu", "cuda")


def ds_config(cfg: TrainConfig, world_size: int, bf16: bool, largest_param: int = 0) -> dict[str, Any]:
    """The DeepSpeed config: micro-batch 1 (one packed row), accumulation driven by train_step's boundary flag."""
    zero: dict[str, Any] = {"stage": cfg.zero_stage}
    if cfg.zero_stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True
        if cfg.sequence_parallel > 1:
            # ZeRO-3's reduce-scatter path averages gradients over every rank, ignoring the SP degree (DeepSpeed
            # 0.19.8, stage3.__avg_scatter_grads); the contiguous all-reduce path divides by world / SP. Take the
            # latter for every bucket: no reduce-scatter, and buckets that hold the largest parameter.
            zero["reduce_scatter"] = False
            zero["reduce_bucket_size"] = max(500_000_000, largest_param)
    if cfg.offload and cfg.zero_stage >= 2:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        if cfg.zero_stage == 3:
            zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    return {
        "train_micro_batch_size_per_gpu": 1,
        "gradient_accumulation_steps": 1,
        "train_batch_size": world_size // cfg.sequence_parallel,  # one row per data-parallel rank
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
