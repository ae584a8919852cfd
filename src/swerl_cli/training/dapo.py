"""One DAPO update (paper §3.2, §4.3): graded groups of checkpoint k -> checkpoint k+1, on the shared TrainEngine.

    select_samples (advantages.py): R_final = test reward + step penalty; A = (R - mean_G)/(std_G + delta);
                                    zero-advantage samples dropped (no refill), infra errors excluded
    theta_old pass:                 no-grad forward over every kept sequence -> trainer logprobs; their mean
                                    |diff| to the sampler's logprobs is logged (decoding-bias guard, §5.2)
    1 epoch:                        kept samples shuffled into steps of `batch_size` trajectories; each step is one
                                    AdamW update of the clipped token-level loss (losses.dapo_policy_loss) summed over
                                    the step's action tokens and divided by their count (token_norm=step) or by the
                                    iteration's (token_norm=iteration); no KL, no entropy, no reference model
    export:                         save_pretrained dir written to OUTPUT.partial, renamed to OUTPUT when complete

Every choice the paper leaves open is a DapoConfig field, documented in docs/training.md.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from swerl_cli.core.config import config_to_dict
from swerl_cli.core.errors import ConfigError, InputError
from swerl_cli.streams.records import SUMMARY, Located, schema_tag
from swerl_cli.training import dist
from swerl_cli.training.advantages import Selection, select_samples
from swerl_cli.training.batching import StepPlan, plan_steps
from swerl_cli.training.dapo_config import DapoConfig
from swerl_cli.training.dapo_loss import Extremes, batch_loss, old_logprob_pass, reduce_extremes
from swerl_cli.training.loop import MetricsLog, run_steps
from swerl_cli.training.losses import get_loss
from swerl_cli.training.publish import partial_dir, publish, start_partial
from swerl_cli.training.trackers import TrackerSpec

Log = Callable[[str], None]
OPTIMIZER_STATE_DIR = "optimizer_state"  # DeepSpeed checkpoint (AdamW moments) saved inside checkpoint k+1


def _stats(values: list[float]) -> dict[str, float | None]:
    """mean / std (population) / min / max of a list; Nones when empty."""
    if not values:
        return {"mean": None, "std": None, "min": None, "max": None}
    m = sum(values) / len(values)
    return {
        "mean": m,
        "std": math.sqrt(sum((v - m) ** 2 for v in values) / len(values)),
        "min": min(values),
        "max": max(values),
    }


def previous_logprob_diff(model: str) -> float | None:
    """The trainer-vs-sampler logprob gap recorded by the update that produced `model`, if any."""
    from swerl_cli.training.engine import RUN_CONFIG_FILE

    path = Path(model) / RUN_CONFIG_FILE
    try:
        value = json.loads(path.read_text()).get("dapo", {}).get("logprob_diff")
    except (OSError, ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def previous_global_step(model: str) -> int:
    """Optimizer steps of the whole run up to checkpoint `model` (0 for a model no update produced)."""
    from swerl_cli.training.engine import RUN_CONFIG_FILE

    try:
        value = json.loads((Path(model) / RUN_CONFIG_FILE).read_text()).get("dapo", {}).get("global_step")
    except (OSError, ValueError, AttributeError):
        return 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def run_dapo(
    records: Iterable[Located],
    model: str,
    output: str,
    cfg: DapoConfig,
    metrics_path: str | None = None,
    log: Log | None = None,
    trackers: TrackerSpec | None = None,
) -> dict[str, Any] | None:
    """Run one DAPO update; returns the swerl.summary/1 record on rank 0 and None on other ranks.

    Tracker steps are global across an RL run: checkpoint k's run config records how many optimizer steps led to
    it, so iteration k's step s is logged at that count + s (metrics.jsonl keeps the update's own step numbers).
    """
    if Path(output).resolve() == Path(model).resolve():
        raise ConfigError(f"--output {output} is --model: write checkpoint k+1 to a new directory")
    say = log if log is not None and dist.is_main() else (lambda _m: None)  # one log line per update, not per rank
    # stdout carries records only: DeepSpeed and transformers print notes, so send them to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        return _run_dapo(records, model, output, cfg, metrics_path, say, trackers)


def _load_kept(sel: Selection, model: str, cfg: DapoConfig) -> tuple[list[Any], int]:
    """Kept graded records -> training samples (all action tokens trainable), each carrying its advantage."""
    from swerl_cli.training.data import DataStats, UnrebuildableError, fit_length, trajectory_to_sample
    from swerl_cli.training.engine import load_tokenizer

    tok = load_tokenizer(model)
    stats = DataStats()
    needs_infer = get_loss(cfg.loss, cfg, "dapo").needs_sampler_logprobs
    samples = []
    sel.counts["samples_skipped_unrebuildable"] = 0
    for s in sel.samples:
        # RL trains every action token, format errors included (the paper masks them only in RFT).
        try:
            sample = trajectory_to_sample(s.loc, tok, mask_format_errors=False, rerender=cfg.rerender, stats=stats)
        except UnrebuildableError:
            if not cfg.skip_unrebuildable:
                raise
            # Its group's advantages were computed with it; the sample itself is not trained on.
            sel.counts["samples_skipped_unrebuildable"] += 1
            continue
        fit_length(sample, cfg.max_seq_len, "error")
        if cfg.old_logprobs == "sampler" and not sample.has_logprobs:
            raise s.loc.error("turns", "no sampler logprobs recorded: pass --old-logprobs trainer to recompute pi_old")
        if needs_infer:
            if not sample.has_logprobs:
                raise s.loc.error(
                    "turns",
                    f"no sampler logprobs recorded: --loss {cfg.loss} compares them with the "
                    "trainer's; collect with logprobs or use --loss dapo",
                )
            sample.infer_logprobs = list(sample.logprobs)
        sample.advantage = s.advantage
        samples.append(sample)
    if sel.samples and not samples:
        raise InputError(None, None, None, "every kept trajectory was skipped by --skip-unrebuildable")
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    return samples, pad


def _run_dapo(
    records: Iterable[Located],
    model: str,
    output: str,
    cfg: DapoConfig,
    metrics_path: str | None,
    log: Log,
    trackers: TrackerSpec | None,
) -> dict[str, Any] | None:
    from swerl_cli.training.engine import EngineConfig, TrainEngine

    sel = select_samples(records, cfg)
    c = sel.counts
    if c["samples"] == 0:
        raise InputError(None, None, None, f"no gradeable trajectories ({c['records']} records read, all excluded)")
    samples, pad = _load_kept(sel, model, cfg)
    dist.ensure_dist_env()
    world = dist.world_size()
    out = Path(output)
    partial = start_partial(out) if dist.is_main() else partial_dir(out)
    plans = plan_steps(
        samples,
        world_size=max(1, world // cfg.sequence_parallel),  # data-parallel shares: an SP group trains one
        micro_batch_tokens=max(cfg.micro_batch_tokens, max((len(s) for s in samples), default=1)),
        batch_size=cfg.batch_size,
        seed=cfg.seed,
        shuffle=cfg.shuffle,
    )
    log(
        f"dapo: {c['samples']} samples in {c['groups']} groups ({c['excluded_grade_error']} grade errors, "
        f"{c['excluded_collect_error']} collect errors excluded); kept {c['samples_kept']}, dropped "
        f"{c['samples_dropped_zero_adv']} zero-advantage samples ({c['groups_dropped']} whole groups); "
        f"{len(plans)} optimizer steps"
    )
    t_init = time.perf_counter()
    engine = TrainEngine.from_config(EngineConfig.from_stage(cfg, model=model), total_steps=len(plans))
    timing = {"engine_init_s": time.perf_counter() - t_init}
    metrics_file = Path(metrics_path) if metrics_path else partial / "metrics.jsonl"
    prev_diff = previous_logprob_diff(model)
    step0 = previous_global_step(model)
    carried = _load_optimizer_state(engine, model, cfg, world, log)
    metrics_log: MetricsLog | None = None
    try:
        metrics_log = MetricsLog(
            metrics_file, kind="dapo", trackers=trackers, run_config=config_to_dict(cfg), step_offset=step0
        )
        t0 = time.perf_counter()
        # pi_old: recomputed in a no-grad pass (trainer), or the sampler's logprobs used as recorded (sampler: no
        # second forward; the sampler-vs-trainer gap is then measured on the first step's forward, under theta_old).
        diff_by_step = old_logprob_pass(engine, plans, samples, pad) if cfg.old_logprobs == "trainer" else []
        timing["old_logprob_pass_s"] = time.perf_counter() - t0
        total = {"tokens": 0.0, "ratio_sum": 0.0, "clip_low": 0.0, "clip_high": 0.0, "loss_sum": 0.0}
        extremes = {"max": -math.inf, "min": math.inf}
        iter_tokens = float(sum(p.n_trainable for p in plans))
        step_extremes: Extremes = {}
        loss = get_loss(cfg.loss, cfg, "dapo")

        def loss_for(plan: StepPlan) -> Any:
            norm = float(plan.n_trainable) if cfg.token_norm == "step" else iter_tokens
            step_extremes.clear()
            measure = cfg.old_logprobs == "sampler" and plan.index == 0
            return batch_loss(loss, norm, step_extremes, measure_gap=measure)

        def metrics_for(plan: StepPlan, s: dict[str, float], dt: float) -> dict[str, Any]:
            reduced = reduce_extremes(step_extremes, engine.device)
            s = {**s, **{k: v for k, v in reduced.items() if v is not None}}
            hi, lo = s.get("ratio_max", -math.inf), s.get("ratio_min", math.inf)
            extremes["max"], extremes["min"] = max(extremes["max"], hi), min(extremes["min"], lo)
            for k in total:
                total[k] += s[k]
            if cfg.old_logprobs == "sampler" and plan.index == 0:
                diff_by_step.append(s["gap_sum"] / s["gap_n"] if s.get("gap_n") else None)
            step_adv = [samples[i].advantage for r in plan.micro for mb in r for i in mb]
            n = max(s["tokens"], 1.0)
            return {
                "loss": s["loss_sum"] / n,
                "tokens": int(s["tokens"]),
                "ratio_mean": s["ratio_sum"] / n,
                "ratio_max": hi,
                "ratio_min": lo,
                "clip_frac_low": s["clip_low"] / n,
                "clip_frac_high": s["clip_high"] / n,
                "adv_mean": _stats(step_adv)["mean"],
                "logprob_diff": diff_by_step[plan.index] if plan.index < len(diff_by_step) else None,
                **loss.metrics(s),
                "tokens_per_s": plan.n_tokens / dt if dt > 0 else 0.0,
            }

        def progress(m: dict[str, Any], n_steps: int) -> None:
            log(
                f"dapo step {m['step']}/{n_steps}  loss {m['loss']:+.4f}  grad {m['grad_norm']:.3f}  "
                f"ratio {m['ratio_mean']:.4f}  clip low/high {m['clip_frac_low']:.3f}/"
                f"{m['clip_frac_high']:.3f}  {m['tokens']} tokens"
            )

        t_run = time.perf_counter()
        last = run_steps(
            engine,
            plans,
            samples,
            pad,
            loss_for=loss_for,
            metrics_for=metrics_for,
            log=metrics_log,
            on_step=progress,
        )
        ratio_max, ratio_min = extremes["max"], extremes["min"]
        timing["steps_s"] = time.perf_counter() - t_run
        diff = _mean_diff(diff_by_step)
        warning = _diff_warning(diff, prev_diff, cfg)
        if warning:
            log(f"dapo: WARNING {warning}")
        n = max(total["tokens"], 1.0)
        summary_stats = {
            "reward_mean": _stats(sel.rewards)["mean"],
            "resolved_rate": _stats(sel.test_rewards)["mean"],
            "advantage": {**_stats(sel.advantages), "positive": sum(a > 0 for a in sel.advantages)},
            "ratio": {
                "mean": total["ratio_sum"] / n if plans else None,
                "max": _finite(ratio_max),
                "min": _finite(ratio_min),
            },
            "clip_frac_low": total["clip_low"] / n if plans else None,
            "clip_frac_high": total["clip_high"] / n if plans else None,
            "logprob_diff": diff,
            "logprob_diff_prev": prev_diff,
            "warning": warning,
        }
        run_config = {
            **config_to_dict(cfg),
            "model": model,
            "world_size": world,
            "dapo": {
                "logprob_diff": diff,
                "policy_version": sel.version,
                "steps": len(plans),
                "global_step": step0 + len(plans),
            },
        }
        metrics_log.write_summary({**summary_stats, "steps": len(plans), **c}, len(plans))
        run_config["dapo"]["optimizer_state_carried"] = carried
        t0 = time.perf_counter()
        if cfg.carry_optimizer:
            engine.save_checkpoint(partial / OPTIMIZER_STATE_DIR, len(plans), {"world_size": world}, keep=1)
        engine.export(partial, run_config)
        timing["save_s"] = time.perf_counter() - t0
    finally:
        if metrics_log is not None:
            metrics_log.close()
        dist.shutdown()
    if not dist.is_main():
        return None
    publish(partial, out)  # the old checkpoint moved aside, the new one renamed in: complete or absent
    if not metrics_path:
        metrics_file = out / "metrics.jsonl"
    return {
        "schema": schema_tag(SUMMARY),
        "kind": "dapo",
        "checkpoint": str(out),
        "model": model,
        "steps": len(plans),
        "tokens": int(total["tokens"]),
        "final_loss": last.get("loss"),
        "metrics_file": str(metrics_file),
        "counts": c,
        **summary_stats,
        "policy_version": sel.version,
        "timing": timing,
        "config": run_config,
    }


def _load_optimizer_state(engine: Any, model: str, cfg: DapoConfig, world: int, log: Log) -> bool:
    """Restore the AdamW moments the previous update saved beside checkpoint k (same world size only)."""
    from swerl_cli.training.engine import RUN_CONFIG_FILE

    state = Path(model) / OPTIMIZER_STATE_DIR
    if not cfg.carry_optimizer or not (state / "latest").is_file():
        return False
    try:
        prev_world = json.loads((Path(model) / RUN_CONFIG_FILE).read_text()).get("world_size")
    except (OSError, ValueError):
        prev_world = None
    if prev_world != world:
        log(f"dapo: optimizer state in {state} was saved by {prev_world} ranks, this run has {world}: starting fresh")
        return False
    path, _ = engine.engine.load_checkpoint(
        str(state), load_optimizer_states=True, load_lr_scheduler_states=False, load_module_strict=True
    )
    if path is None:
        raise ConfigError(f"{state}: optimizer state could not be loaded; delete it or pass --no-carry-optimizer")
    for group in engine.engine.optimizer.param_groups:  # this run's hyperparameters, not the saved ones
        group.update(lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps)
    return True


def _mean_diff(per_step: list[float | None]) -> float | None:
    vals = [v for v in per_step if v is not None]
    return sum(vals) / len(vals) if vals else None


def _diff_warning(diff: float | None, prev: float | None, cfg: DapoConfig) -> str | None:
    """Say why the trainer-vs-sampler gap looks wrong (absolute level, or a jump from the previous iteration)."""
    if diff is None:
        return None
    if diff > cfg.logprob_diff_warn:
        return (
            f"mean |logprob(trainer) - logprob(sampler)| = {diff:.4f} > {cfg.logprob_diff_warn}: the sampler may "
            "truncate or reshape decoding (check the server's generation config) or run another checkpoint"
        )
    if prev is not None and prev > 1e-4 and diff > cfg.logprob_diff_jump * prev:
        return f"mean |logprob(trainer) - logprob(sampler)| jumped from {prev:.4f} to {diff:.4f}"
    return None


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
