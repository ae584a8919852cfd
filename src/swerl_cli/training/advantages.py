"""Rewards, the step penalty, group advantages and dynamic sampling (paper Eq. 2-4, §4.3). Pure Python.

From graded records to the samples one DAPO update trains on:
1. exclude infrastructure failures (grade.status == "error", or a collect exit_status "error"): counted, never
   turned into reward 0;
2. refuse biased sampling and batches mixed across policy versions (guard rails of paper §5.2);
3. R_final = test reward (grade.resolved) + step penalty (Eq. 3-4), also on successes and on max-turn episodes;
4. A_i = (R_i - mean_G) / (std_G + delta) over each (run, instance_id) group (Eq. 2);
5. drop the samples whose advantage is zero (DAPO dynamic sampling, no refill).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from swerl_cli.grading.verdict import REASONS
from swerl_cli.policy.base import biased_parameters
from swerl_cli.streams.records import GRADED, Located, UniqueIds, check_schema, get_path, record_id, require
from swerl_cli.training.dapo_config import DapoConfig

ZERO_ADV_TOL = 1e-8  # |A| at or below this is "zero advantage"
_EQUAL_TOL = 1e-12  # rewards closer than this within a group count as equal


def step_penalty(turns: int, l_thr: int = 10, t_max: int = 40) -> float:
    """Eq. 4: 0 below L_thr turns, else (L_thr - turns) / (T_max - L_thr). `step_penalty(25, 10, 40) == -0.5`."""
    if turns < l_thr:
        return 0.0
    return (l_thr - turns) / (t_max - l_thr)


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


def _count_tampering(loc: Located, c: dict[str, int]) -> None:
    """Count a patch whose test-infrastructure edits were set aside, and its attribution reason (docs/grading.md)."""
    if get_path(loc.obj, "grade.set_aside", None):
        c["patches_set_aside"] += 1
    reason = get_path(loc.obj, "grade.reason", None)
    if reason in REASONS:
        c[f"unresolved_{reason}"] += 1


def select_samples(records: Iterable[Located], cfg: DapoConfig) -> Selection:
    """Graded records -> the samples with non-zero advantage, plus counts of everything excluded or dropped."""
    sel = Selection()
    c = {
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
    groups: dict[tuple[str, str], list[ScoredRollout]] = {}
    first_version: tuple[str | None, Located] | None = None
    ids = UniqueIds()
    for loc in records:
        c["records"] += 1
        check_schema(loc, GRADED)
        ids.check(loc, record_id(loc.obj))
        status = require(loc, "grade.status", str)
        if status == "error":
            c["excluded_grade_error"] += 1
            continue
        if loc.obj.get("exit_status") == "error":
            c["excluded_collect_error"] += 1
            continue
        _count_tampering(loc, c)
        resolved = require(loc, "grade.resolved", bool)
        run = str(require(loc, "run", (str, int)))
        iid = require(loc, "instance_id", str)
        sample = require(loc, "sample", int)
        turns = require(loc, "stats.turns", int)
        if turns > cfg.t_max:
            raise loc.error(
                "stats.turns", f"{turns} turns > t_max {cfg.t_max}: set --t-max to the --max-turns collect used"
            )
        if not cfg.allow_biased_sampling:
            _check_sampling(loc)
        version = get_path(loc.obj, "policy.version", None)
        if first_version is None:
            first_version = (version, loc)
        elif version != first_version[0] and not cfg.allow_mixed_versions:
            other = first_version[1]
            raise loc.error(
                "policy.version",
                f"{version!r} differs from {first_version[0]!r} at {other.source}:{other.line}; one DAPO update "
                "trains on rollouts of one checkpoint (synchronous, on-policy): collect again with the current "
                "checkpoint or pass --allow-mixed-versions",
            )
        test_reward = 1.0 if resolved else 0.0
        penalty = step_penalty(turns, cfg.l_thr, cfg.t_max)
        s = ScoredRollout(loc, run, iid, sample, turns, test_reward, penalty, test_reward + penalty)
        key = (run, iid)
        if any(o.sample == sample for o in groups.get(key, ())):
            raise loc.error("sample", f"duplicate sample {sample} in group run={run!r} instance_id={iid!r}")
        groups.setdefault(key, []).append(s)
        c["samples"] += 1
        c["resolved"] += int(resolved)
        c["max_turns"] += int(loc.obj.get("exit_status") == "max_turns")
        sel.rewards.append(s.reward)
        sel.test_rewards.append(test_reward)
    if first_version is not None:
        sel.version = first_version[0]
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
    sel.counts = c
    return sel
