"""Rejection fine-tuning (paper §4.2): next-token loss on the policy's own action tokens of selected trajectories.

The loss of one optimizer step is the mean negative log-likelihood over every trainable token of the step's global
batch (all ranks, all micro-batches): sum(-logp * mask) / N_step. Format-error turns are masked (Figure 2);
prompts and observations never carry loss. Outputs under OUTPUT: the final `save_pretrained` checkpoint with its
tokenizer and `swerl_run_config.json`, `metrics.jsonl`, and `ds_checkpoints/step-N` for `--resume`.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson

from swerl_cli.config import config_to_dict
from swerl_cli.errors import ConfigError, InputError
from swerl_cli.records import SUMMARY, Located, schema_tag
from swerl_cli.training import dist
from swerl_cli.training.batching import collate, plan_steps
from swerl_cli.training.data import load_samples
from swerl_cli.training.rft_config import RftConfig

StepCallback = Callable[[dict[str, Any], int], None]


def sft_loss(normalizer: float) -> Callable[[Any, Any], tuple[Any, dict[str, float]]]:
    """Masked NLL of one micro-batch divided by the step's global trainable-token count."""

    def loss_fn(logp: Any, batch: Any) -> tuple[Any, dict[str, float]]:
        nll = -(logp * batch.loss_mask).sum()  # scalar: this micro-batch's summed NLL over trainable tokens
        stats = {
            "nll_sum": float(nll.detach()),
            "trainable_tokens": float(batch.loss_mask.sum()),
            "tokens": float(sum(len(s) for s in batch.samples)),
        }
        return nll / max(normalizer, 1.0), stats

    return loss_fn


class MetricsLog:
    """metrics.jsonl on rank 0 (kept up to `start` on resume) plus optional tensorboard / wandb."""

    def __init__(self, path: Path, start: int, report_to: str, run_config: dict[str, Any]):
        self.path, self.fh, self.tb, self.wandb = path, None, None, None
        if not dist.is_main():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = []
        if start > 0 and path.exists():
            kept = [ln for ln in path.read_bytes().splitlines(keepends=True) if _step_of(ln) <= start]
        path.write_bytes(b"".join(kept))
        self.fh = open(path, "ab")  # closed in close()
        if report_to == "tensorboard":
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise ConfigError(
                    "--report-to tensorboard needs the tensorboard package: pip install tensorboard"
                ) from None
            self.tb = SummaryWriter(str(path.parent / "tensorboard"))
        elif report_to == "wandb":
            try:
                import wandb
            except ImportError:
                raise ConfigError("--report-to wandb needs the wandb package: pip install wandb") from None
            self.wandb = wandb.init(config=run_config, resume="allow")

    def write(self, metrics: dict[str, Any]) -> None:
        """Append one step's metrics (rank 0 only)."""
        if self.fh is None:
            return
        self.fh.write(orjson.dumps(metrics, option=orjson.OPT_APPEND_NEWLINE))
        self.fh.flush()
        scalars = {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and k != "step"}
        if self.tb is not None:
            for k, v in scalars.items():
                self.tb.add_scalar(f"rft/{k}", v, metrics["step"])
        if self.wandb is not None:
            self.wandb.log(scalars, step=metrics["step"])

    def close(self) -> None:
        """Flush and close every sink."""
        for sink in (self.fh, self.tb, self.wandb):
            if sink is not None:
                (sink.finish if sink is self.wandb else sink.close)()


def _step_of(line: bytes) -> int:
    try:
        return int(orjson.loads(line).get("step", 0))
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        return 1 << 62


def run_rft(cfg: RftConfig, records: Iterable[Located], on_step: StepCallback | None = None) -> dict[str, Any]:
    """Train `cfg.model` on the records' trainable tokens; returns the swerl.summary/1 record."""
    # stdout carries records only: DeepSpeed and transformers print build/progress notes, so send them to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        return _run_rft(cfg, records, on_step)


def _run_rft(cfg: RftConfig, records: Iterable[Located], on_step: StepCallback | None) -> dict[str, Any]:
    from swerl_cli.training.engine import EngineConfig, TrainEngine, load_tokenizer

    tok = load_tokenizer(cfg.model)
    samples, stats = load_samples(
        records,
        tok,
        max_seq_len=cfg.max_seq_len,
        too_long=cfg.too_long,
        skip_invalid=cfg.skip_invalid,
        mask_format_errors=cfg.mask_format_errors,
        rerender=cfg.rerender,
    )
    if not samples:
        raise InputError(None, None, None, f"no trainable trajectories in the input ({stats.records} records read)")
    dist.ensure_dist_env()
    rank, world = dist.rank(), dist.world_size()
    plans = plan_steps(
        samples,
        world_size=world,
        micro_batch_tokens=cfg.micro_batch_tokens or cfg.max_seq_len,
        batch_size=cfg.batch_size,
        batch_tokens=cfg.batch_tokens,
        seed=cfg.seed,
        shuffle=cfg.shuffle,
        epochs=cfg.epochs,
    )
    out = Path(cfg.output)
    run_config = {**config_to_dict(cfg), "world_size": world, "total_steps": len(plans)}
    engine = TrainEngine.from_config(EngineConfig.from_stage(cfg), total_steps=len(plans))
    log: MetricsLog | None = None
    try:
        start = engine.load_checkpoint(out / "ds_checkpoints")[0] if cfg.resume else 0
        metrics_path = Path(cfg.metrics) if cfg.metrics else out / "metrics.jsonl"
        log = MetricsLog(metrics_path, start, cfg.report_to, run_config)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        last: dict[str, Any] = {}
        total_tokens = 0
        t_run = time.perf_counter()
        stop = len(plans) if cfg.max_steps is None else min(len(plans), cfg.max_steps)
        for plan in plans[start:stop]:
            mine = [collate([samples[i] for i in mb], pad) for mb in plan.micro[rank]]
            mine += [collate([], pad)] * (plan.n_micro - len(mine))
            t0 = time.perf_counter()
            s = engine.train_step(mine, sft_loss(plan.n_trainable))
            dt = time.perf_counter() - t0
            total_tokens += int(s["tokens"])
            step = plan.index + 1
            last = {
                "step": step,
                "loss": s["nll_sum"] / max(s["trainable_tokens"], 1.0),
                "lr": s["lr"],
                "grad_norm": s["grad_norm"],
                "tokens": int(s["tokens"]),
                "trainable_tokens": int(s["trainable_tokens"]),
                "masked_share": 1.0 - s["trainable_tokens"] / max(s["tokens"], 1.0),
                "tokens_per_s": s["tokens"] / dt if dt > 0 else 0.0,
                "samples": plan.n_samples,
                "micro_batches": plan.n_micro,
                "elapsed_s": time.perf_counter() - t_run,
            }
            log.write(last)
            if on_step is not None and dist.is_main():
                on_step(last, len(plans))
            if cfg.save_every and (step % cfg.save_every == 0 or step == stop):
                engine.save_checkpoint(out / "ds_checkpoints", step, {}, keep=cfg.keep_checkpoints)
        engine.export(out, run_config)
    finally:
        if log is not None:
            log.close()
        dist.shutdown()
    return {
        "schema": schema_tag(SUMMARY),
        "kind": "rft",
        "checkpoint": str(out),
        "steps": last.get("step", start),
        "total_steps": len(plans),
        "resumed_from": start,
        "tokens": total_tokens,
        "final_loss": last.get("loss"),
        "metrics_file": str(metrics_path),
        "data": {k: getattr(stats, k) for k in stats.__slots__},
        "config": run_config,
    }
