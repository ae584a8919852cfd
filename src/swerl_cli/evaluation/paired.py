"""Paired comparison of two graded runs evaluated on the same (task, sample seed) pairs (`swerl eval A B --paired`).

When two checkpoints are evaluated on the same tasks with the same sampling seeds, episode i of task t on one side
pairs with episode i of task t on the other, and the difference is measured pair by pair: the task-to-task spread
cancels, so the paired standard error is smaller than the unpaired one whenever the two runs' outcomes correlate.

Library entry points (for scripts such as the paper-mini table):

    paired_compare(path_a: str, path_b: str, *, key: str = "auto") -> Paired
    paired(records_a: Iterable[Located], records_b: Iterable[Located], label_a: str, label_b: str, *,
           key: str = "auto") -> Paired

Pairing key: `(instance_id, policy.sampling.seed)` with `key="seed"`, `(instance_id, sample)` with `key="sample"`;
`"auto"` keys on the seed when every record on both sides carries one (`swerl collect --seed` records
seed + sample), else on the sample index. A key met twice on one side is an InputError naming both lines (exit 3).

`Paired` fields (all definitions; outcomes are grade.resolved as 0/1):
- `a`, `b`: labels (the paths; `<stdin>` for `-`); `key`: "seed" or "sample".
- `pairs`: n, the keys present on both sides with neither record an infra error (`grade.status == "error"`).
- `diff_mean`, `diff_se`, `z`: the mean of d_i = B_i - A_i over the n pairs, its standard error (sample std of the
  d_i, ddof = 1, over sqrt(n); 0.0 when n == 1) and z = mean / SE; None where undefined (n == 0, or SE == 0 for z).
- `pass1_a`, `pass1_b`: each side's mean outcome over the n pairs (so `diff_mean == pass1_b - pass1_a`).
- `both_resolved`, `both_unresolved`: the concordant pairs; `a_only` = b (A resolved, B not), `b_only` = c (B
  resolved, A not): the discordant pairs.
- `p_two_sided`: McNemar's exact test, min(1, 2 * P(X <= min(b, c))) with X ~ Binomial(b + c, 1/2), computed
  exactly (fractions); 1.0 when b + c == 0. `p_b_greater`: the one-sided P(X >= c), the chance of c or more
  B-only wins if neither run were better.
- `unpaired_a`, `unpaired_b`: each side's pass@1 over all of its own records (errors excluded) as `swerl eval`
  computes it: {"mean", "sem", "n"}.
- `errors_a`, `errors_b`: infra-error records on each side; `error_pairs`: the keys on both sides excluded because
  either record is an error (listed as `Episode`s of side A).
- `only_in_a`, `only_in_b`: the episodes whose key the other side lacks, never silently dropped (listed whole).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from swerl_cli.core.errors import InputError
from swerl_cli.evaluation.metrics import mean_sem
from swerl_cli.streams.graded import GradedRecord, read_graded
from swerl_cli.streams.jsonl import read_records
from swerl_cli.streams.records import PAIRED, Located, require, schema_tag

KEYS = ("auto", "seed", "sample")


def binomial_tail(n: int, k: int) -> Fraction:
    """P(X >= k) for X ~ Binomial(n, 1/2), exactly: `binomial_tail(7, 6) == Fraction(1, 16)`."""
    k = max(k, 0)
    return Fraction(sum(math.comb(n, i) for i in range(k, n + 1)), 2**n)


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact two-sided p for b and c discordant pairs: `mcnemar_exact(1, 6) == 0.125`; 1.0 when b + c == 0."""
    n = b + c
    # P(X <= min) == P(X >= max) by the symmetry of Binomial(n, 1/2)
    return float(min(Fraction(1), 2 * binomial_tail(n, max(b, c))))


@dataclass(frozen=True, slots=True)
class Episode:
    """One side's record of one pair key: the graded view (without the record dict) and its sampling seed."""

    view: GradedRecord
    seed: int | None

    @property
    def where(self) -> str:
        """`FILE:LINE` of the record."""
        return f"{self.view.loc.source}:{self.view.loc.line}"

    def to_json(self) -> dict[str, Any]:
        """What a listing shows of it: instance_id, sample, seed, grade.status, where."""
        v = self.view
        return {
            "instance_id": v.instance_id,
            "sample": v.sample,
            "seed": self.seed,
            "status": v.status,
            "where": self.where,
        }


def read_episodes(records: Iterable[Located]) -> list[Episode]:
    """Every record validated (read_graded, plus `policy.sampling.seed` when present); a bad field is an InputError."""
    return [
        Episode(read_graded(loc).detached(), require(loc, "policy.sampling.seed", int, optional=True))
        for loc in records
    ]


def pair_key_kind(a: list[Episode], b: list[Episode], key: str = "auto") -> str:
    """`seed` or `sample`: what `key` resolves to for these two sides (see the module docstring)."""
    if key not in KEYS:
        raise ValueError(f"key must be one of {KEYS}; got {key!r}")
    if key != "auto":
        return key
    both = [*a, *b]
    return "seed" if both and all(e.seed is not None for e in both) else "sample"


def index_episodes(episodes: list[Episode], kind: str) -> dict[tuple[str, int], Episode]:
    """(instance_id, seed or sample) -> episode; a key met twice, or a record without it, is a located InputError."""
    out: dict[tuple[str, int], Episode] = {}
    for ep in episodes:
        v = ep.view
        if kind == "seed":
            value = ep.seed if ep.seed is not None else require(v.loc, "policy.sampling.seed", int)
        else:
            value = v.need("sample")
        k = (v.instance_id, value)
        if k in out:
            raise InputError(
                v.loc.source,
                v.loc.line,
                "policy.sampling.seed" if kind == "seed" else "sample",
                f"({v.instance_id!r}, {kind} {value}) again, first at {out[k].where}; --paired takes one record per "
                f"(instance_id, {kind}) on each side (one run per file, e.g. swerl filter --where 'run == \"r1\"')",
            )
        out[k] = ep
    return out


@dataclass
class Paired:
    """The paired comparison of B against A; `to_json()` is a `swerl.paired/1` record (module docstring)."""

    a: str
    b: str
    key: str
    pairs: int = 0
    diff_mean: float | None = None
    diff_se: float | None = None
    z: float | None = None
    pass1_a: float | None = None
    pass1_b: float | None = None
    both_resolved: int = 0
    both_unresolved: int = 0
    a_only: int = 0
    b_only: int = 0
    p_two_sided: float = 1.0
    p_b_greater: float = 1.0
    unpaired_a: dict[str, Any] = field(default_factory=dict)
    unpaired_b: dict[str, Any] = field(default_factory=dict)
    errors_a: int = 0
    errors_b: int = 0
    error_pairs: list[Episode] = field(default_factory=list)
    only_in_a: list[Episode] = field(default_factory=list)
    only_in_b: list[Episode] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The machine-readable record (`swerl eval A B --paired --json`)."""
        return {
            "schema": schema_tag(PAIRED),
            "a": self.a,
            "b": self.b,
            "key": self.key,
            "pairs": self.pairs,
            "diff": {"mean": self.diff_mean, "se": self.diff_se, "z": self.z},
            "pass@1_paired": {"a": self.pass1_a, "b": self.pass1_b},
            "concordant": {"both_resolved": self.both_resolved, "both_unresolved": self.both_unresolved},
            "discordant": {"a_only": self.a_only, "b_only": self.b_only},
            "mcnemar": {"p_two_sided": self.p_two_sided, "p_b_greater": self.p_b_greater},
            "unpaired": {"a": self.unpaired_a, "b": self.unpaired_b},
            "errors": {"a": self.errors_a, "b": self.errors_b, "pairs": len(self.error_pairs)},
            "error_pairs": [e.to_json() for e in self.error_pairs],
            "only_in_a": [e.to_json() for e in self.only_in_a],
            "only_in_b": [e.to_json() for e in self.only_in_b],
        }


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else x


def _unpaired(episodes: list[Episode]) -> dict[str, Any]:
    outcomes = [1.0 if e.view.resolved else 0.0 for e in episodes if not e.view.is_error]
    mean, sem = mean_sem(outcomes)
    return {"mean": _finite(mean), "sem": _finite(sem), "n": len(outcomes)}


def paired(
    records_a: Iterable[Located], records_b: Iterable[Located], label_a: str, label_b: str, *, key: str = "auto"
) -> Paired:
    """Compare B against A pair by pair (see the module docstring for every definition)."""
    eps_a, eps_b = read_episodes(records_a), read_episodes(records_b)
    kind = pair_key_kind(eps_a, eps_b, key)
    side_a, side_b = index_episodes(eps_a, kind), index_episodes(eps_b, kind)
    out = Paired(label_a, label_b, kind, unpaired_a=_unpaired(eps_a), unpaired_b=_unpaired(eps_b))
    out.errors_a = sum(e.view.is_error for e in eps_a)
    out.errors_b = sum(e.view.is_error for e in eps_b)
    out.only_in_a = [side_a[k] for k in sorted(side_a.keys() - side_b.keys())]
    out.only_in_b = [side_b[k] for k in sorted(side_b.keys() - side_a.keys())]
    xs: list[int] = []  # A outcomes, pair by pair
    ys: list[int] = []  # B outcomes
    for k in sorted(side_a.keys() & side_b.keys()):
        ea, eb = side_a[k], side_b[k]
        if ea.view.is_error or eb.view.is_error:
            out.error_pairs.append(ea)
            continue
        xs.append(int(ea.view.resolved))
        ys.append(int(eb.view.resolved))
    n = out.pairs = len(xs)
    out.both_resolved = sum(x and y for x, y in zip(xs, ys, strict=True))
    out.a_only = sum(x and not y for x, y in zip(xs, ys, strict=True))
    out.b_only = sum(y and not x for x, y in zip(xs, ys, strict=True))
    out.both_unresolved = n - out.both_resolved - out.a_only - out.b_only
    if n:
        out.diff_mean, out.diff_se = mean_sem([float(y - x) for x, y in zip(xs, ys, strict=True)])
        out.z = out.diff_mean / out.diff_se if out.diff_se else None
        out.pass1_a, out.pass1_b = sum(xs) / n, sum(ys) / n
    out.p_two_sided = mcnemar_exact(out.a_only, out.b_only)
    out.p_b_greater = float(binomial_tail(out.a_only + out.b_only, out.b_only))
    return out


def source_label(path: str) -> str:
    """How a report names an input: the path, or `<stdin>` for `-`."""
    return "<stdin>" if path == "-" else path


def paired_compare(path_a: str, path_b: str, *, key: str = "auto") -> Paired:
    """Read two graded inputs (paths or `-`) and compare B against A pair by pair."""
    return paired(read_records(path_a), read_records(path_b), source_label(path_a), source_label(path_b), key=key)
