"""Rewards, the step penalty, group advantages and dynamic sampling (paper Eq. 2-4, §4.3). Pure Python.

From graded records to the samples one DAPO update trains on:
1. exclude infrastructure failures (grade.status == "error", or a collect exit_status "error"): counted, never
   turned into reward 0;
2. refuse biased sampling and batches mixed across policy versions (guard rails of paper §5.2);
3. R_final = test reward (grade.resolved) + step penalty (Eq. 3-4), also on successes and on max-turn episodes;
4. A_i = (R_i - mean_G) / (std_G + delta) over each (run, instance_id) group (Eq. 2; streams.graded.group_key:
   the run compared as text, so run 1 and "1" are one group, as `swerl filter` groups them);
5. drop the samples whose advantage is zero (DAPO dynamic sampling, no refill).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from swerl_cli.grading.verdict import REASONS
from swerl_cli.policy.base import biased_parameters
from swerl_cli.streams.graded import GradedRecord, GroupKey, read_graded, step_penalty
from swerl_cli.streams.records import Located, UniqueIds, get_path
from swerl_cli.training.dapo_config import DapoConfig

ZERO_ADV_TOL = 1e-8  # |A| at or below this is "zero advantage"
_EQUAL_TOL = 1e-12  # rewards closer than this within a group count as equal


def group_advantages(rewards: list[float], std: str = "population", delta: float = 1e-6) -> list[float]:
    """Eq. 2: (R - mean) / (std + delta) within one group; all-equal groups give exactly 0.

    `group_advantages([1.0, 0.0]) == [~1.0, ~-1.0]` (population std 0.5).
    """
    n = len(rewards)
    if n < 2 or max(rewards) - min(rewards) <= _EQUAL_TOL:
        return [0.0] * n
    mean = sum(rewards) / n
    ddof = 0 if std == "population" else 1
    sd = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (n - ddof))
    return [(r - mean) / (sd + delta) for r in rewards]


@dataclass(slots=True)
class ScoredRollout:
    """One graded trajectory chosen for the update, with its reward decomposition and advantage."""

    loc: Located
    run: str
    instance_id: str
    sample: int
    turns: int
    test_reward: float
    penalty: float
    reward: float
    advantage: float = 0.0


@dataclass(slots=True)
class Selection:
    """The kept samples plus the counts a summary reports."""

    samples: list[ScoredRollout] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    rewards: list[float] = field(default_factory=list)  # every valid sample's R_final (before dropping)
    test_rewards: list[float] = field(default_factory=list)
    advantages: list[float] = field(default_factory=list)  # the kept samples' advantages
    version: str | None = None


def _check_sampling(loc: Located) -> None:
    """Refuse a trajectory whose rollout sampling was biased (the ratio rho would be an invalid estimator)."""
    biased = get_path(loc.obj, "policy.biased_sampling", False)
    params = biased_parameters(get_path(loc.obj, "policy.sampling", {}) or {})
    if biased is True or params:
        why = ", ".join(params) or "policy.biased_sampling is true"
        raise loc.error(
            "policy.sampling",
            f"sampled with biased decoding ({why}); DAPO's ratio needs temperature 1 and no truncation: "
            "collect again with unbiased sampling or pass --allow-biased-sampling",
        )


def _new_counts() -> dict[str, int]:
    return {
        "records": 0,
        "excluded_grade_error": 0,
        "excluded_collect_error": 0,
        "samples": 0,
        "groups": 0,
        "groups_dropped": 0,
        "groups_too_small": 0,
        "samples_dropped_zero_adv": 0,
        "samples_kept": 0,
        "resolved": 0,
        "max_turns": 0,
        "patches_set_aside": 0,  # graded patches whose test-infrastructure edits the grader set aside
        **{f"unresolved_{r}": 0 for r in REASONS},  # scored 0 because the patch broke the test run (grade.reason)
    }


class _Versions:
    """One DAPO update trains on rollouts of one checkpoint: the first record's policy.version, checked on the rest."""

    def __init__(self, allow_mixed: bool):
        self.allow_mixed = allow_mixed
        self.first: tuple[Any, Located] | None = None

    def check(self, g: GradedRecord) -> None:
        if self.first is None:
            self.first = (g.policy_version, g.loc)
        elif g.policy_version != self.first[0] and not self.allow_mixed:
            version, other = self.first
            raise g.loc.error(
                "policy.version",
                f"{g.policy_version!r} differs from {version!r} at {other.source}:{other.line}; one DAPO update "
                "trains on rollouts of one checkpoint (synchronous, on-policy): collect again with the current "
                "checkpoint or pass --allow-mixed-versions",
            )


def _score(g: GradedRecord, cfg: DapoConfig) -> ScoredRollout:
    """R_final of one valid rollout (test reward + step penalty), after dapo's own checks of the record."""
    run = str(g.need("run"))
    sample = g.need("sample")
    turns = g.need("turns")
    if turns > cfg.t_max:
        raise g.loc.error(
            "stats.turns", f"{turns} turns > t_max {cfg.t_max}: set --t-max to the --max-turns collect used"
        )
    if not cfg.allow_biased_sampling:
        _check_sampling(g.loc)
    penalty = step_penalty(turns, cfg.l_thr, cfg.t_max)
    return ScoredRollout(g.loc, run, g.instance_id, sample, turns, g.test_reward, penalty, g.test_reward + penalty)


def _read_groups(records: Iterable[Located], cfg: DapoConfig, sel: Selection) -> dict[GroupKey, list[ScoredRollout]]:
    """Steps 1-3: the valid rollouts scored and grouped (streams.graded.group_key); counts into `sel.counts`."""
    c = sel.counts
    groups: dict[GroupKey, list[ScoredRollout]] = {}
    versions = _Versions(cfg.allow_mixed_versions)
    ids = UniqueIds()
    for loc in records:
        c["records"] += 1
        g = read_graded(loc)
        ids.check(loc, g.id)
        if g.is_error or g.is_collect_error:
            c["excluded_grade_error" if g.is_error else "excluded_collect_error"] += 1
            continue
        c["patches_set_aside"] += g.set_aside
        if g.reason in REASONS:
            c[f"unresolved_{g.reason}"] += 1
        s = _score(g, cfg)
        versions.check(g)
        members = groups.setdefault(g.group, [])
        if any(o.sample == s.sample for o in members):
            raise loc.error(
                "sample", f"duplicate sample {s.sample} in group run={s.run!r} instance_id={s.instance_id!r}"
            )
        members.append(s)
        c["samples"] += 1
        c["resolved"] += int(g.resolved)
        c["max_turns"] += int(g.exit_status == "max_turns")
        sel.rewards.append(s.reward)
        sel.test_rewards.append(s.test_reward)
    sel.version = versions.first[0] if versions.first is not None else None
    return groups


def select_samples(records: Iterable[Located], cfg: DapoConfig) -> Selection:
    """Graded records -> the samples with non-zero advantage, plus counts of everything excluded or dropped."""
    sel = Selection(counts=_new_counts())
    groups = _read_groups(records, cfg, sel)
    c = sel.counts
    c["groups"] = len(groups)
    # Canonical order (groups by key, members by sample), so the seeded step split does not depend on the order in
    # which the records arrived (grade writes them as they finish): same rollouts + same seed = same update.
    for _, members in sorted(groups.items()):
        members.sort(key=lambda m: m.sample)
        if len(members) < 2:
            c["groups_too_small"] += 1
        advs = group_advantages([m.reward for m in members], cfg.std, cfg.adv_delta)
        kept = 0
        for m, a in zip(members, advs, strict=True):
            if abs(a) <= ZERO_ADV_TOL:
                c["samples_dropped_zero_adv"] += 1
                continue
            m.advantage = a
            sel.samples.append(m)
            sel.advantages.append(a)
            kept += 1
        if kept == 0:
            c["groups_dropped"] += 1
    c["samples_kept"] = len(sel.samples)
    return sel
