"""Metrics over graded records: pass@1 with its standard error, unbiased pass@k, breakdowns, distributions.

Definitions (docs/records.md, "eval"):
- A *sample* is one graded record. Infra errors (`grade.status == "error"`) are reported and excluded unless
  `errors_as_failures`, which counts them as unresolved.
- pass@1 = mean of the per-sample outcomes x_i in {0, 1} over all counted samples; its SEM is the sample
  standard deviation (ddof=1) of those outcomes divided by sqrt(n) (0.0 when n < 2).
- pass@k per task (instance_id, across every run in the file) is 1 - C(n-c, k) / C(n, k) with n counted
  samples and c resolved ones; pass@k is the mean over tasks with n >= k. Tasks with n < k are excluded from
  that k and counted in `pass_at_k_excluded`.
- A record id met twice in one input is an error (records.UniqueIds), never counted twice.
- Distributions use linear interpolation between closest ranks for p50/p90 (numpy's default).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from swerl_cli.streams.graded import read_graded
from swerl_cli.streams.jsonl import read_records
from swerl_cli.streams.records import EVAL, Located, UniqueIds, schema_tag


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimator 1 - C(n-c, k)/C(n, k): `pass_at_k(4, 1, 2) == 0.5`."""
    if k > n:
        raise ValueError(f"k={k} > n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_sem(values: list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (sample std, ddof=1, over sqrt(n)): `mean_sem([0, 1]) == (0.5, 0.5)`."""
    n = len(values)
    if n == 0:
        return float("nan"), float("nan")
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def distribution(values: list[float]) -> dict[str, float | int | None]:
    """{n, mean, p50, p90, max} with interpolated percentiles; all None when empty."""
    if not values:
        return {"n": 0, "mean": None, "p50": None, "p90": None, "max": None}
    xs = sorted(values)
    return {"n": len(xs), "mean": sum(xs) / len(xs), "p50": _pct(xs, 50), "p90": _pct(xs, 90), "max": xs[-1]}


def _pct(xs: list[float], q: float) -> float:
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass
class Report:
    """The metrics of one input; `to_json()` is a `swerl.eval/1` record."""

    source: str
    samples: int = 0
    counted: int = 0
    errors: int = 0
    errors_as_failures: bool = False
    pass1: float = float("nan")
    pass1_sem: float = float("nan")
    pass_at_k: dict[int, float] = field(default_factory=dict)
    pass_at_k_tasks: dict[int, int] = field(default_factory=dict)
    pass_at_k_excluded: dict[int, int] = field(default_factory=dict)
    tasks: int = 0
    by_repo: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_exit_status: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_status: dict[str, int] = field(default_factory=dict)
    turns: dict[str, Any] = field(default_factory=dict)
    tokens: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The machine-readable record (`swerl eval --json`)."""
        return {
            "schema": schema_tag(EVAL),
            "source": self.source,
            "samples": self.samples,
            "counted": self.counted,
            "errors": self.errors,
            "errors_as_failures": self.errors_as_failures,
            "tasks": self.tasks,
            "pass@1": {"mean": _num(self.pass1), "sem": _num(self.pass1_sem), "n": self.counted},
            "pass@k": {str(k): v for k, v in self.pass_at_k.items()},
            "pass@k_tasks": {str(k): v for k, v in self.pass_at_k_tasks.items()},
            "pass@k_excluded": {str(k): v for k, v in self.pass_at_k_excluded.items()},
            "by_repo": self.by_repo,
            "by_exit_status": self.by_exit_status,
            "by_status": self.by_status,
            "turns": self.turns,
            "tokens": self.tokens,
        }


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def _rates(groups: dict[str, list[bool]]) -> dict[str, dict[str, Any]]:
    return {
        key: {"n": len(v), "resolved": sum(v), "rate": sum(v) / len(v) if v else None}
        for key, v in sorted(groups.items())
    }


def evaluate(records: Iterable[Located], source: str, *, errors_as_failures: bool = False) -> Report:
    """Aggregate graded records into a Report (see the module docstring for every definition)."""
    rep = Report(source=source, errors_as_failures=errors_as_failures)
    per_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # instance_id -> [n, c]
    outcomes: list[float] = []
    by_repo: dict[str, list[bool]] = defaultdict(list)
    by_exit: dict[str, list[bool]] = defaultdict(list)
    statuses: Counter[str] = Counter()
    turns: list[float] = []
    tokens: list[float] = []
    ids = UniqueIds()  # a record counted twice would skew pass@k
    for loc in records:
        s = read_graded(loc)
        ids.check(loc, s.id)
        rep.samples += 1
        statuses[s.status] += 1
        if s.turns is not None:
            turns.append(s.turns)
        if s.tokens is not None:
            tokens.append(s.tokens)
        if s.status == "error":
            rep.errors += 1
            if not errors_as_failures:
                continue
        ok = s.resolved and s.status != "error"
        outcomes.append(1.0 if ok else 0.0)
        task = per_task[s.instance_id]
        task[0] += 1
        task[1] += ok
        by_repo[s.repo or "(none)"].append(ok)
        by_exit[s.exit_status or "(none)"].append(ok)
    rep.counted = len(outcomes)
    rep.pass1, rep.pass1_sem = mean_sem(outcomes)
    rep.tasks = len(per_task)
    max_n = max((n for n, _ in per_task.values()), default=0)
    for k in range(1, max_n + 1):
        vals = [pass_at_k(n, c, k) for n, c in per_task.values() if n >= k]
        rep.pass_at_k[k] = sum(vals) / len(vals)
        rep.pass_at_k_tasks[k] = len(vals)
        rep.pass_at_k_excluded[k] = rep.tasks - len(vals)
    rep.by_repo = _rates(by_repo)
    rep.by_exit_status = _rates(by_exit)
    rep.by_status = dict(sorted(statuses.items()))
    rep.turns = distribution(turns)
    rep.tokens = distribution(tokens)
    return rep


def evaluate_file(src: str, *, errors_as_failures: bool = False) -> Report:
    """Read one JSONL path (or `-`) of graded records and evaluate it."""
    return evaluate(read_records(src), "<stdin>" if src == "-" else src, errors_as_failures=errors_as_failures)


def short_labels(sources: list[str]) -> list[str]:
    """Column labels: file names when they are unique, else the paths as given."""
    names = [s.rsplit("/", 1)[-1] for s in sources]
    return names if len(set(names)) == len(names) else list(sources)
