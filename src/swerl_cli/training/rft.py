"""Rejection fine-tuning (paper §4.2): next-token loss on the policy's own action tokens of selected trajectories.

The loss (`loss: sft`, training/losses/sft.py) of one optimizer step is the mean negative log-likelihood over every
trainable token of the step's global batch (all ranks, all micro-batches): sum(-logp * mask) / N_step.
Format-error turns are masked (Figure 2); prompts and observations never carry loss. Outputs under OUTPUT: the
final `save_pretrained` checkpoint with its tokenizer and `swerl_run_config.json`, `metrics.jsonl`, and
`ds_checkpoints/step-N` for `--resume`, `optimizer_state/` (--save-optimizer: what `dapo --init-optimizer` starts
from); all written to OUTPUT.partial and renamed into place when complete (training/publish.py), so OUTPUT is
always one run's complete checkpoint.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from swerl_cli.core.config import config_to_dict
from swerl_cli.core.errors import InputError
from swerl_cli.streams.records import SUMMARY, Located, schema_tag
from swerl_cli.training import dist
from swerl_cli.training.batching import StepPlan, plan_steps
from swerl_cli.training.checkpoint import OPTIMIZER_STATE_DIR
from swerl_cli.training.data import DataStats, load_samples
from swerl_cli.training.loop import MetricsLog, run_steps, tracker_spec
from swerl_cli.training.losses import Loss, LossInputs, from_config
from swerl_cli.training.publish import partial_dir, publish, start_partial
from swerl_cli.training.rft_config import RftConfig
from swerl_cli.training.trackers import TrackerSpec

StepCallback = Callable[[dict[str, Any], int], None]


def rft_loss_fn(loss: Loss, normalizer: float) -> Callable[[Any, Any], tuple[Any, dict[str, float]]]:
    """The engine's loss_fn for rft's configured loss (`cfg.loss`, default `sft`: losses/sft.py, the masked NLL
    over the step's trainable tokens), plus the micro-batch's token count."""

    def loss_fn(logp: Any, batch: Any) -> tuple[Any, dict[str, float]]:
        value, st = loss(LossInputs(logp, batch.loss_mask), normalizer)
        stats = {k: float(v) for k, v in st.items()}
        stats["tokens"] = float(sum(len(s) for s in batch.samples))
        return value, stats

    return loss_fn


def rft_metrics(plan: StepPlan, s: dict[str, float], dt: float) -> dict[str, Any]:
    """RFT's fields of a metrics line from the step's summed stats."""
    return {
        "loss": s["nll_sum"] / max(s["trainable_tokens"], 1.0),
        "tokens": int(s["tokens"]),
        "trainable_tokens": int(s["trainable_tokens"]),
        "masked_share": 1.0 - s["trainable_tokens"] / max(s["tokens"], 1.0),
        "tokens_per_s": s["tokens"] / dt if dt > 0 else 0.0,
    }


def run_rft(
    records: Iterable[Located],
    cfg: RftConfig,
    on_step: StepCallback | None = None,
    trackers: TrackerSpec | None = None,
) -> dict[str, Any]:
    """Train `cfg.model` on the records' trainable tokens into `cfg.output`; returns the swerl.summary/1 record."""
    # stdout carries records only: DeepSpeed and transformers print build/progress notes, so send them to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        return _run_rft(records, cfg, on_step, trackers)


def _prepare(records: Iterable[Located], cfg: RftConfig) -> tuple[Any, list[Any], DataStats, list[StepPlan]]:
    """The tokenizer, the trainable samples (data.py) and their optimizer steps."""
    from swerl_cli.core.model_dir import load_tokenizer

    tok = load_tokenizer(cfg.model)
    samples, stats = load_samples(
        records,
        tok,
        max_seq_len=cfg.max_seq_len,
        too_long=cfg.too_long,
        skip_invalid=cfg.skip_invalid,
        mask_format_errors=cfg.mask_format_errors,
        rerender=cfg.rerender,
        skip_unrebuildable=cfg.skip_unrebuildable,
    )
    if not samples:
        raise InputError(None, None, None, f"no trainable trajectories in the input ({stats.records} records read)")
    dist.ensure_dist_env()
    plans = plan_steps(
        samples,
        world_size=max(1, dist.world_size() // cfg.sequence_parallel),  # data-parallel shares: an SP group trains one
        micro_batch_tokens=cfg.micro_batch_tokens or cfg.max_seq_len,
        batch_size=cfg.batch_size,
        batch_tokens=cfg.batch_tokens,
        seed=cfg.seed,
        shuffle=cfg.shuffle,
        epochs=cfg.epochs,
    )
    return tok, samples, stats, plans


def _run_rft(
    records: Iterable[Located], cfg: RftConfig, on_step: StepCallback | None, trackers: TrackerSpec | None
) -> dict[str, Any]:
    from swerl_cli.training.engine import TrainEngine

    out = Path(cfg.output)
    # Everything is written to OUTPUT.partial and renamed into place at the end (publish.py): an interrupted run
    # never leaves old weights beside new metrics. --resume continues an interrupted run's OUTPUT.partial.
    partial = start_partial(out, keep=cfg.resume) if dist.is_main() else partial_dir(out)
    tok, samples, stats, plans = _prepare(records, cfg)
    run_config = {**config_to_dict(cfg), "world_size": dist.world_size(), "total_steps": len(plans)}
    engine = TrainEngine.from_config(cfg, total_steps=len(plans), tokenizer=tok)
    log: MetricsLog | None = None
    metrics_path = Path(cfg.metrics) if cfg.metrics else partial / "metrics.jsonl"
    try:
        start = _resume_from(engine, out, partial, metrics_path, cfg) if cfg.resume else 0
        spec = tracker_spec(cfg.report_to, metrics_path, trackers)
        log = MetricsLog(metrics_path, kind="rft", start=start, trackers=spec, run_config=run_config)
        stop = len(plans) if cfg.max_steps is None else min(len(plans), cfg.max_steps)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        last = _train(engine, cfg, plans, samples, pad, log, start, stop, on_step, partial)
        if cfg.save_optimizer:  # the AdamW moments `dapo --init-optimizer OUTPUT` starts from
            engine.save_checkpoint(partial / OPTIMIZER_STATE_DIR, stop, {"world_size": dist.world_size()}, keep=1)
        engine.export(partial, run_config)
    finally:
        if log is not None:
            log.close()
        dist.shutdown()
    if dist.is_main():
        publish(partial, out)
    return {
        "schema": schema_tag(SUMMARY),
        "kind": "rft",
        "checkpoint": str(out),
        "steps": last.get("step", start),
        "total_steps": len(plans),
        "resumed_from": start,
        "tokens": sum(p.n_tokens for p in plans[start:stop]),
        "final_loss": last.get("loss"),
        "metrics_file": str(Path(cfg.metrics) if cfg.metrics else out / "metrics.jsonl"),
        "data": {k: getattr(stats, k) for k in stats.__slots__},
        "config": run_config,
    }


def _train(
    engine: Any,
    cfg: RftConfig,
    plans: list[StepPlan],
    samples: list[Any],
    pad: int,
    log: MetricsLog,
    start: int,
    stop: int,
    on_step: StepCallback | None,
    partial: Path,
) -> dict[str, Any]:
    """Optimizer steps plans[start:stop] with the configured loss; resumable checkpoints every `save_every`."""
    loss = from_config(cfg, "rft")

    def checkpoint(step: int) -> None:
        if cfg.save_every and (step % cfg.save_every == 0 or step == stop):
            engine.save_checkpoint(partial / "ds_checkpoints", step, {}, keep=cfg.keep_checkpoints)

    return run_steps(
        engine,
        plans,
        samples,
        pad,
        loss_for=lambda plan: rft_loss_fn(loss, plan.n_trainable),
        metrics_for=rft_metrics,
        log=log,
        start=start,
        stop=stop,
        on_step=on_step,
        after_step=checkpoint,
    )


def _resume_from(engine: Any, out: Path, partial: Path, metrics_path: Path, cfg: RftConfig) -> int:
    """--resume: continue an interrupted run's OUTPUT.partial, else a finished OUTPUT's DeepSpeed checkpoints
    (its metrics lines copied into the new partial, which MetricsLog then cuts at the resumed step)."""
    source = partial if (partial / "ds_checkpoints" / "latest").is_file() else out
    if source == out and dist.is_main() and not cfg.metrics and (out / "metrics.jsonl").is_file():
        shutil.copyfile(out / "metrics.jsonl", metrics_path)
    return int(engine.load_checkpoint(source / "ds_checkpoints")[0])
