"""The DAPO update's optimizer steps as `run_steps` sees them: each step's loss_fn, its metrics line, the progress
line, and the totals over the update that its summary record reports.

    steps = DapoSteps(cfg, plans, samples, engine.device, diff_by_step)
    run_steps(engine, plans, samples, pad, loss_for=steps.loss_for, metrics_for=steps.metrics_for, ...)
    stats = steps.summary(sel, prev_diff)     # reward / advantage / ratio / clip / logprob-gap fields
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from swerl_cli.training.advantages import Selection
from swerl_cli.training.batching import StepPlan
from swerl_cli.training.dapo_config import DapoConfig
from swerl_cli.training.dapo_loss import Extremes, batch_loss, reduce_extremes
from swerl_cli.training.losses import from_config

Log = Callable[[str], None]


def stats(values: list[float]) -> dict[str, float | None]:
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


class DapoSteps:
    """Per-step loss and metrics of one update, and the sums its summary needs.

    `diff_by_step`: the theta_old pass's per-step logprob gap (old_logprobs=trainer), or empty (sampler: the first
    step's forward measures it, appended here).
    """

    def __init__(
        self, cfg: DapoConfig, plans: list[StepPlan], samples: list[Any], device: str, diff_by_step: list[float | None]
    ):
        self.cfg, self.plans, self.samples, self.device = cfg, plans, samples, device
        self.diff_by_step = diff_by_step
        self.loss = from_config(cfg, "dapo")
        self.total = {"tokens": 0.0, "ratio_sum": 0.0, "clip_low": 0.0, "clip_high": 0.0, "loss_sum": 0.0}
        self.extremes = {"max": -math.inf, "min": math.inf}
        self.iter_tokens = float(sum(p.n_trainable for p in plans))
        self.step_extremes: Extremes = {}

    def loss_for(self, plan: StepPlan) -> Any:
        """The engine's loss_fn for `plan`: normalised by the step's or the iteration's action tokens."""
        norm = float(plan.n_trainable) if self.cfg.token_norm == "step" else self.iter_tokens
        self.step_extremes.clear()
        measure = self.cfg.old_logprobs == "sampler" and plan.index == 0
        return batch_loss(self.loss, norm, self.step_extremes, measure_gap=measure)

    def metrics_for(self, plan: StepPlan, s: dict[str, float], dt: float) -> dict[str, Any]:
        """One step's DAPO fields of the metrics line; adds the step's sums to the update's totals."""
        reduced = reduce_extremes(self.step_extremes, self.device)
        s = {**s, **{k: v for k, v in reduced.items() if v is not None}}
        hi, lo = s.get("ratio_max", -math.inf), s.get("ratio_min", math.inf)
        self.extremes["max"], self.extremes["min"] = max(self.extremes["max"], hi), min(self.extremes["min"], lo)
        for k in self.total:
            self.total[k] += s[k]
        if self.cfg.old_logprobs == "sampler" and plan.index == 0:
            self.diff_by_step.append(s["gap_sum"] / s["gap_n"] if s.get("gap_n") else None)
        step_adv = [self.samples[i].advantage for r in plan.micro for mb in r for i in mb]
        n = max(s["tokens"], 1.0)
        return {
            "loss": s["loss_sum"] / n,
            "tokens": int(s["tokens"]),
            "ratio_mean": s["ratio_sum"] / n,
            "ratio_max": hi,
            "ratio_min": lo,
            "clip_frac_low": s["clip_low"] / n,
            "clip_frac_high": s["clip_high"] / n,
            "adv_mean": stats(step_adv)["mean"],
            "entropy": s["entropy_sum"] / n if "entropy_sum" in s else None,  # mean -log p of the action tokens
            "logprob_diff": self.diff_by_step[plan.index] if plan.index < len(self.diff_by_step) else None,
            **self.loss.metrics(s),
            "tokens_per_s": plan.n_tokens / dt if dt > 0 else 0.0,
        }

    @staticmethod
    def progress(log: Log) -> Callable[[dict[str, Any], int], None]:
        """run_steps' on_step: one stderr line per optimizer step."""

        def on_step(m: dict[str, Any], n_steps: int) -> None:
            log(
                f"dapo step {m['step']}/{n_steps}  loss {m['loss']:+.4f}  grad {m['grad_norm']:.3f}  "
                f"ratio {m['ratio_mean']:.4f}  clip low/high {m['clip_frac_low']:.3f}/"
                f"{m['clip_frac_high']:.3f}  {m['tokens']} tokens"
            )

        return on_step

    def mean_diff(self) -> float | None:
        """The update's mean trainer-vs-sampler logprob gap over the steps that measured one."""
        vals = [v for v in self.diff_by_step if v is not None]
        return sum(vals) / len(vals) if vals else None

    def summary(self, sel: Selection, diff: float | None, prev_diff: float | None, warning: str | None) -> dict:
        """The update's statistics fields of the summary record."""
        n = max(self.total["tokens"], 1.0)
        ran = bool(self.plans)
        return {
            "reward_mean": stats(sel.rewards)["mean"],
            "resolved_rate": stats(sel.test_rewards)["mean"],
            "advantage": {**stats(sel.advantages), "positive": sum(a > 0 for a in sel.advantages)},
            "ratio": {
                "mean": self.total["ratio_sum"] / n if ran else None,
                "max": _finite(self.extremes["max"]),
                "min": _finite(self.extremes["min"]),
            },
            "clip_frac_low": self.total["clip_low"] / n if ran else None,
            "clip_frac_high": self.total["clip_high"] / n if ran else None,
            "logprob_diff": diff,
            "logprob_diff_prev": prev_diff,
            "warning": warning,
        }


def diff_warning(diff: float | None, prev: float | None, cfg: DapoConfig) -> str | None:
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
