"""Which pi_old the DAPO ratio uses (`--old-logprobs`): the trainer's recomputation, the sampler's recorded
logprobs, or `auto`, which takes the sampler's wherever the logged sampler-trainer gap allows it.

    mode, why = resolve_old_logprobs(cfg, samples, prior_gap)   # "trainer" | "sampler", and a log line

auto picks `sampler` (no theta_old forward pass) when every kept sample carries the sampler's logprobs for all its
action tokens, the loss does not weigh pi_old against pi_infer (tis, mis), and the previous update logged a mean
|logprob(trainer) - logprob(sampler)| at or below `old_logprobs_max_gap`. Otherwise `trainer`: the first update of a
run (no gap logged yet) recomputes pi_old and so measures the gap the next one reads.
"""

from __future__ import annotations

from typing import Any

from swerl_cli.training.dapo_config import DapoConfig


def resolve_old_logprobs(cfg: DapoConfig, samples: list[Any], prior_gap: float | None) -> tuple[str, str]:
    """(`trainer` or `sampler`, why) for this update."""
    if cfg.old_logprobs != "auto":
        return cfg.old_logprobs, f"--old-logprobs {cfg.old_logprobs}"
    if cfg.loss in ("tis", "mis"):
        return "trainer", f"auto: --loss {cfg.loss} weighs pi_old against the sampler's logprobs"
    missing = sum(not s.has_logprobs for s in samples)
    if missing:
        return "trainer", f"auto: {missing} of {len(samples)} kept samples have no sampler logprobs"
    if prior_gap is None:
        return "trainer", "auto: no sampler-trainer gap logged by the previous update (this one measures it)"
    if prior_gap > cfg.old_logprobs_max_gap:
        return "trainer", f"auto: logged gap {prior_gap:.2e} > --old-logprobs-max-gap {cfg.old_logprobs_max_gap:g}"
    return "sampler", f"auto: logged gap {prior_gap:.2e} <= {cfg.old_logprobs_max_gap:g}, the recompute pass skipped"
