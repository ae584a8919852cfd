"""One DAPO update (paper §3.2, §4.3): graded groups of checkpoint k -> checkpoint k+1, on the shared TrainEngine.

    select_samples (advantages.py): R_final = test reward + step penalty; A = (R - mean_G)/(std_G + delta);
                                    zero-advantage samples dropped (no refill), infra errors excluded
    theta_old pass:                 no-grad forward over every kept sequence -> trainer logprobs; their mean
                                    |diff| to the sampler's logprobs is logged (decoding-bias guard, §5.2); skipped
                                    when pi_old is the sampler's (old_logprobs sampler, or auto: dapo_old.py)
    1 epoch:                        kept groups shuffled whole into steps of <= `batch_size` trajectories
                                    (step_fill groups: each step's advantages sum to zero; `samples`: shuffled
                                    samples); each step is one AdamW update of the configured loss
                                    (training/losses; `loss: dapo`: the clipped token-level objective) summed
                                    over the step's action tokens and divided by their count (token_norm=step)
                                    or by the iteration's (token_norm=iteration); no KL, no entropy, no
                                    reference model
    export:                         save_pretrained dir written to OUTPUT.partial, renamed to OUTPUT when complete

Every choice the paper leaves open is a DapoConfig field, documented in docs/training.md. The steps' loss and
metrics are dapo_steps.py; what checkpoint k carries (run config, optimizer state) is checkpoint.py.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from swerl_cli.core.config import config_to_dict
from swerl_cli.core.errors import ConfigError, InputError
from swerl_cli.streams.records import SUMMARY, Located, schema_tag
from swerl_cli.training import dist
from swerl_cli.training.advantages import Selection, select_samples
from swerl_cli.training.batching import StepPlan, plan_steps
from swerl_cli.training.checkpoint import OPTIMIZER_STATE_DIR, PriorRun
from swerl_cli.training.dapo_config import DapoConfig
from swerl_cli.training.dapo_loss import old_logprob_pass
from swerl_cli.training.dapo_old import resolve_old_logprobs
from swerl_cli.training.dapo_steps import DapoSteps, diff_warning
from swerl_cli.training.loop import MetricsLog, run_steps
from swerl_cli.training.losses import from_config
from swerl_cli.training.publish import partial_dir, publish, start_partial
from swerl_cli.training.trackers import TrackerSpec

Log = Callable[[str], None]


def run_dapo(
    records: Iterable[Located], cfg: DapoConfig, log: Log | None = None, trackers: TrackerSpec | None = None
) -> dict[str, Any] | None:
    """Run one DAPO update of `cfg.model` (checkpoint k) into `cfg.output` (k+1); returns the swerl.summary/1
    record on rank 0 and None on other ranks.

    Tracker steps are global across an RL run: checkpoint k's run config records how many optimizer steps led to
    it, so iteration k's step s is logged at that count + s (metrics.jsonl keeps the update's own step numbers).
    """
    if not cfg.model or not cfg.output:
        raise ConfigError("--model CKPT_k and --output CKPT_k+1 are both required")
    if Path(cfg.output).resolve() == Path(cfg.model).resolve():
        raise ConfigError(f"--output {cfg.output} is --model: write checkpoint k+1 to a new directory")
    say = log if log is not None and dist.is_main() else (lambda _m: None)  # one log line per update, not per rank
    # stdout carries records only: DeepSpeed and transformers print notes, so send them to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        return _run_dapo(records, cfg, say, trackers)


@dataclass(slots=True)
class _Data:
    """The update's input: the selection, its kept samples as token rows, and their optimizer steps."""

    sel: Selection
    samples: list[Any]
    tokenizer: Any
    plans: list[StepPlan]
    groups: list[int]  # each kept sample's group (index in the selection's canonical group order)

    @property
    def pad(self) -> int:
        return self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0


def _prepare(records: Iterable[Located], cfg: DapoConfig, log: Log) -> _Data:
    """Select and weigh the samples (advantages.py), tokenise the kept ones, cut them into optimizer steps."""
    from swerl_cli.core.model_dir import load_tokenizer

    sel = select_samples(records, cfg)
    c = sel.counts
    if c["samples"] == 0:
        raise InputError(None, None, None, f"no gradeable trajectories ({c['records']} records read, all excluded)")
    tok = load_tokenizer(cfg.model)
    samples, groups = _load_kept(sel, tok, cfg)
    dist.ensure_dist_env()
    plans = plan_steps(
        samples,
        world_size=max(1, dist.world_size() // cfg.sequence_parallel),  # data-parallel shares: an SP group trains one
        micro_batch_tokens=max(cfg.micro_batch_tokens, max((len(s) for s in samples), default=1)),
        batch_size=cfg.batch_size,
        seed=cfg.seed,
        shuffle=cfg.shuffle,
        groups=groups if cfg.step_fill == "groups" else None,
    )
    log(
        f"dapo: {c['samples']} samples in {c['groups']} groups ({c['excluded_grade_error']} grade errors, "
        f"{c['excluded_collect_error']} collect errors excluded); kept {c['samples_kept']}, dropped "
        f"{c['samples_dropped_zero_adv']} zero-advantage samples ({c['groups_dropped']} whole groups); "
        f"{len(plans)} optimizer steps ({cfg.step_fill})"
    )
    return _Data(sel, samples, tok, plans, groups)


def _load_kept(sel: Selection, tok: Any, cfg: DapoConfig) -> tuple[list[Any], list[int]]:
    """Kept graded records -> training samples (all action tokens trainable), each carrying its advantage, and
    each one's group index."""
    from swerl_cli.training.data import DataStats, UnrebuildableError, fit_length, trajectory_to_sample
    from swerl_cli.training.follow_stream import staleness_weight

    stats = DataStats()
    needs_infer = from_config(cfg, "dapo").needs_sampler_logprobs
    samples: list[Any] = []
    groups: list[int] = []
    keys: dict[tuple[str, str], int] = {}
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
        sample.advantage = s.advantage * staleness_weight(s.loc)  # 1 unless dapo --follow --stale-decay set it
        samples.append(sample)
        groups.append(keys.setdefault((s.run, s.instance_id), len(keys)))
    if sel.samples and not samples:
        raise InputError(None, None, None, "every kept trajectory was skipped by --skip-unrebuildable")
    return samples, groups


def _run_dapo(records: Iterable[Located], cfg: DapoConfig, log: Log, trackers: TrackerSpec | None) -> dict | None:
    from swerl_cli.training.engine import TrainEngine

    data = _prepare(records, cfg, log)
    out = Path(cfg.output)
    partial = start_partial(out) if dist.is_main() else partial_dir(out)
    t_init = time.perf_counter()
    engine = TrainEngine.from_config(cfg, total_steps=len(data.plans), tokenizer=data.tokenizer)
    timing = {"engine_init_s": time.perf_counter() - t_init}
    prior = PriorRun.read(cfg.model)  # checkpoint k's run config, read once
    carried = prior.load_optimizer_state(engine, cfg, log)
    metrics_log: MetricsLog | None = None
    try:
        metrics_log = MetricsLog(
            Path(cfg.metrics) if cfg.metrics else partial / "metrics.jsonl",
            kind="dapo",
            trackers=trackers,
            run_config=config_to_dict(cfg),
            step_offset=prior.global_step,
        )
        old_mode, why = resolve_old_logprobs(cfg, data.samples, prior.logprob_diff)
        log(f"dapo: pi_old from the {old_mode} ({why})")
        steps, last = _train(engine, data, replace(cfg, old_logprobs=old_mode), metrics_log, timing, log)
        diff = steps.mean_diff()
        warning = diff_warning(diff, prior.logprob_diff, cfg)
        if warning:
            log(f"dapo: WARNING {warning}")
        stats = steps.summary(data.sel, diff, prior.logprob_diff, warning)
        metrics_log.write_summary({**stats, "steps": len(data.plans), **data.sel.counts}, len(data.plans))
        run_config = _run_config(cfg, data, diff, prior, carried)
        run_config["dapo"]["old_logprobs_used"] = old_mode
        _save(engine, partial, run_config, cfg, len(data.plans), timing)
    finally:
        if metrics_log is not None:
            metrics_log.close()
        dist.shutdown()
    if not dist.is_main():
        return None
    publish(partial, out)  # the old checkpoint moved aside, the new one renamed in: complete or absent
    return {
        "schema": schema_tag(SUMMARY),
        "kind": "dapo",
        "checkpoint": str(out),
        "model": cfg.model,
        "steps": len(data.plans),
        "tokens": int(steps.total["tokens"]),
        "final_loss": last.get("loss"),
        "metrics_file": str(Path(cfg.metrics) if cfg.metrics else out / "metrics.jsonl"),
        "counts": data.sel.counts,
        **stats,
        "policy_version": data.sel.version,
        "old_logprobs_used": old_mode,
        "timing": timing,
        "config": run_config,
    }


def _train(
    engine: Any, data: _Data, cfg: DapoConfig, metrics_log: MetricsLog, timing: dict[str, float], log: Log
) -> tuple[DapoSteps, dict[str, Any]]:
    """pi_old, then one epoch of optimizer steps; returns the steps' state and the last step's metrics."""
    t0 = time.perf_counter()
    # pi_old: recomputed in a no-grad pass (trainer), or the sampler's logprobs used as recorded (sampler: no second
    # forward; the sampler-vs-trainer gap is then measured on the first step's forward, under theta_old).
    trainer = cfg.old_logprobs == "trainer"
    diff_by_step = old_logprob_pass(engine, data.plans, data.samples, data.pad) if trainer else []
    timing["old_logprob_pass_s"] = time.perf_counter() - t0
    steps = DapoSteps(cfg, data.plans, data.samples, engine.device, diff_by_step)
    t_run = time.perf_counter()
    last = run_steps(
        engine,
        data.plans,
        data.samples,
        data.pad,
        loss_for=steps.loss_for,
        metrics_for=steps.metrics_for,
        log=metrics_log,
        on_step=DapoSteps.progress(log),
    )
    timing["steps_s"] = time.perf_counter() - t_run
    return steps, last


def _run_config(cfg: DapoConfig, data: _Data, diff: float | None, prior: PriorRun, carried: str) -> dict[str, Any]:
    """What checkpoint k+1's swerl_run_config.json records (the next update reads it back: checkpoint.py)."""
    n = len(data.plans)
    return {
        **config_to_dict(cfg),
        "world_size": dist.world_size(),
        "dapo": {
            "logprob_diff": diff,
            "policy_version": data.sel.version,
            "steps": n,
            "global_step": prior.global_step + n,
            "optimizer_state_carried": carried != "fresh",
            "optimizer_start": carried,  # checkpoint (k's own), init (--init-optimizer) or fresh
        },
    }


def _save(engine: Any, partial: Path, run_config: dict, cfg: DapoConfig, n_steps: int, timing: dict) -> None:
    """Write checkpoint k+1 into OUTPUT.partial: the optimizer state (carry_optimizer), then the weights."""
    t0 = time.perf_counter()
    if cfg.carry_optimizer:
        engine.save_checkpoint(partial / OPTIMIZER_STATE_DIR, n_steps, {"world_size": dist.world_size()}, keep=1)
    engine.export(partial, run_config)
    timing["save_s"] = time.perf_counter() - t0
