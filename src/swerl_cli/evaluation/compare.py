"""Instance-by-instance comparison of two graded runs (`swerl eval A B --compare`), e.g. the SWE-bench harness's
verdicts (converted by `swerl convert`) against swerl's grading of the same predictions.

Each input holds at most one record per `instance_id` (the harness grades one prediction per instance). An
instance is an *agreement* when both sides give the same `grade.resolved` and neither is an infra error, a
*disagreement* when they differ, an *error* when either side has `grade.status == "error"` (no verdict to compare),
and *only in A/B* when the other side lacks it. The agreement rate is agreements / (agreements + disagreements).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from swerl_cli.streams.graded import read_graded
from swerl_cli.streams.jsonl import read_records
from swerl_cli.streams.records import COMPARE, Located, schema_tag


@dataclass(slots=True)
class Verdict:
    """One side's verdict on one instance."""

    status: str
    resolved: bool
    where: str


def verdicts(records: Iterable[Located]) -> dict[str, Verdict]:
    """instance_id -> verdict; a second record of one instance is an error naming both lines."""
    out: dict[str, Verdict] = {}
    for loc in records:
        g = read_graded(loc)
        iid = g.instance_id
        if iid in out:
            raise loc.error(
                "instance_id",
                f"{iid!r} again, first at {out[iid].where}; --compare takes one record per instance on each side "
                "(keep one sample first, e.g. swerl filter --where 'sample == 0')",
            )
        where = f"{loc.source}:{loc.line}" if loc.line is not None else loc.source
        out[iid] = Verdict(g.status, g.resolved, where)
    return out


@dataclass
class Comparison:
    """The per-instance rows and the counts; `to_json()` is a `swerl.compare/1` record."""

    a: str
    b: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def agreement_rate(self) -> float | None:
        """agreements / (agreements + disagreements), None when nothing was comparable."""
        n = self.counts.get("agree", 0) + self.counts.get("disagree", 0)
        return self.counts.get("agree", 0) / n if n else None

    def to_json(self) -> dict[str, Any]:
        """The machine-readable record (`swerl eval --compare --json`)."""
        return {
            "schema": schema_tag(COMPARE),
            "a": self.a,
            "b": self.b,
            "counts": self.counts,
            "agreement_rate": self.agreement_rate,
            "instances": self.rows,
        }


def _side(v: Verdict | None) -> dict[str, Any] | None:
    return None if v is None else {"status": v.status, "resolved": v.resolved, "where": v.where}


def compare(a: dict[str, Verdict], b: dict[str, Verdict], label_a: str, label_b: str) -> Comparison:
    """Compare two verdict maps instance by instance (sorted by instance_id)."""
    keys = ("agree", "disagree", "error", "only_a", "only_b", "both_resolved", "both_unresolved")
    cmp = Comparison(label_a, label_b, counts=dict.fromkeys(keys, 0))
    for iid in sorted(a.keys() | b.keys()):
        va, vb = a.get(iid), b.get(iid)
        if va is None or vb is None:
            kind = "only_b" if va is None else "only_a"
        elif "error" in (va.status, vb.status):
            kind = "error"
        elif va.resolved == vb.resolved:
            kind = "agree"
            cmp.counts["both_resolved" if va.resolved else "both_unresolved"] += 1
        else:
            kind = "disagree"
        cmp.counts[kind] += 1
        cmp.rows.append({"instance_id": iid, "verdict": kind, "a": _side(va), "b": _side(vb)})
    return cmp


def compare_files(path_a: str, path_b: str) -> Comparison:
    """Read two graded inputs (paths or `-`) and compare them."""
    label = {p: "<stdin>" if p == "-" else p for p in (path_a, path_b)}
    return compare(verdicts(read_records(path_a)), verdicts(read_records(path_b)), label[path_a], label[path_b])
