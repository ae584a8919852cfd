"""The metrics `swerl eval` shows, defined once, and their plain-text renderings (`--format markdown|csv`).

Each metric is a `Cell`: the label and text of the terminal table (`--format table`, drawn by the CLI with rich) and
the raw values behind it, keyed by column name, for CSV. Markdown shows the table's text, transposed to one row per
input; CSV shows the raw numbers (full precision, the SEM in its own column, empty where a metric is undefined).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from swerl_cli.evaluation.compare import Comparison
from swerl_cli.evaluation.metrics import Report, short_labels
from swerl_cli.evaluation.paired import Paired

FORMATS = ("table", "markdown", "csv")


@dataclass(frozen=True, slots=True)
class Cell:
    """One metric of one input: the table's label and text, and the raw values for CSV."""

    label: str
    text: str
    raw: dict[str, Any]


def fmt(x: float | int | None, digits: int = 3) -> str:
    """A number as the tables show it: `fmt(0.5) == "0.500"`, `fmt(2.0) == "2"`, `fmt(None) == "-"`."""
    if x is None or x != x:
        return "-"
    return f"{x:.{digits}f}" if isinstance(x, float) and not float(x).is_integer() else f"{x:g}"


def fmt_p(p: float) -> str:
    """A p-value with three significant digits, so a small one is not shown as 0: `fmt_p(0.000122) == "0.000122"`."""
    return f"{p:.3g}"


def _num(x: float) -> float | None:
    return None if x != x else x


def max_k(reports: Sequence[Report]) -> int:
    """The largest k of pass@k over the inputs (0 when there is none)."""
    return max((max(r.pass_at_k, default=0) for r in reports), default=0)


def report_cells(r: Report, top_k: int) -> list[Cell]:
    """The main table's metrics of one input, in the table's order, pass@2..pass@top_k included."""
    cells = [
        Cell("samples (errors)", f"{r.samples} ({r.errors})", {"samples": r.samples, "errors": r.errors}),
        Cell("tasks", str(r.tasks), {"tasks": r.tasks}),
        Cell(
            "pass@1 ± SEM",
            f"{fmt(r.pass1)} ± {fmt(r.pass1_sem)}",
            {"pass@1": _num(r.pass1), "pass@1_sem": _num(r.pass1_sem)},
        ),
    ]
    for k in range(2, top_k + 1):
        excl = r.pass_at_k_excluded.get(k, r.tasks)
        text = "-" if k not in r.pass_at_k else fmt(r.pass_at_k[k]) + (f" ({excl} excl.)" if excl else "")
        cells.append(Cell(f"pass@{k}", text, {f"pass@{k}": r.pass_at_k.get(k), f"pass@{k}_excluded": excl}))
    for name in ("turns", "tokens"):
        dist = getattr(r, name)
        for stat in ("mean", "p50", "p90", "max"):
            cells.append(Cell(f"{name} {stat}", fmt(dist.get(stat), 1), {f"{name}_{stat}": dist.get(stat)}))
    return cells


def paired_cells(p: Paired) -> list[Cell]:
    """The paired comparison's metrics (B against A), in the table's order."""
    ua, ub = p.unpaired_a, p.unpaired_b
    return [
        Cell("pairs (key)", f"{p.pairs} (instance_id, {p.key})", {"pairs": p.pairs, "key": p.key}),
        Cell(
            "pass@1 A ± SEM, unpaired",
            f"{fmt(ua['mean'])} ± {fmt(ua['sem'])} (n {ua['n']})",
            {"a_pass@1": ua["mean"], "a_pass@1_sem": ua["sem"], "a_n": ua["n"]},
        ),
        Cell(
            "pass@1 B ± SEM, unpaired",
            f"{fmt(ub['mean'])} ± {fmt(ub['sem'])} (n {ub['n']})",
            {"b_pass@1": ub["mean"], "b_pass@1_sem": ub["sem"], "b_n": ub["n"]},
        ),
        Cell(
            "pass@1 A / B on the pairs",
            f"{fmt(p.pass1_a)} / {fmt(p.pass1_b)}",
            {"a_pass@1_paired": p.pass1_a, "b_pass@1_paired": p.pass1_b},
        ),
        Cell(
            "diff B - A ± SE, paired",
            f"{fmt(p.diff_mean)} ± {fmt(p.diff_se)}",
            {"diff": p.diff_mean, "diff_se": p.diff_se},
        ),
        Cell("z = diff / SE", fmt(p.z, 2), {"z": p.z}),
        Cell(
            "discordant: A only / B only",
            f"{p.a_only} / {p.b_only}",
            {"a_only": p.a_only, "b_only": p.b_only},
        ),
        Cell(
            "concordant: both / neither",
            f"{p.both_resolved} / {p.both_unresolved}",
            {"both_resolved": p.both_resolved, "both_unresolved": p.both_unresolved},
        ),
        Cell("McNemar exact p, two-sided", fmt_p(p.p_two_sided), {"p_two_sided": p.p_two_sided}),
        Cell("p one-sided, B > A", fmt_p(p.p_b_greater), {"p_b_greater": p.p_b_greater}),
        Cell(
            "infra errors A / B (pairs excluded)",
            f"{p.errors_a} / {p.errors_b} ({len(p.error_pairs)})",
            {"errors_a": p.errors_a, "errors_b": p.errors_b, "error_pairs": len(p.error_pairs)},
        ),
        Cell(
            "episodes only in A / only in B",
            f"{len(p.only_in_a)} / {len(p.only_in_b)}",
            {"only_in_a": len(p.only_in_a), "only_in_b": len(p.only_in_b)},
        ),
    ]


def compare_rows(cmp: Comparison) -> list[list[str]]:
    """`--compare`'s per-instance rows: instance_id, verdict, A's grade.status, B's ("-" where a side lacks it)."""
    return [
        [r["instance_id"], r["verdict"], *("-" if s is None else s["status"] for s in (r["a"], r["b"]))]
        for r in cmp.rows
    ]


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *(line(r) for r in rows)]) + "\n"


def _csv(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([["" if v is None else v for v in row] for row in rows])
    return buf.getvalue()


def render(fmt_name: str, reports: list[Report], cmp: Comparison | None = None, pair: Paired | None = None) -> str:
    """The text of `--format markdown|csv`: a block of one row per input, then (each after a blank line) the
    `--compare` rows and the `--paired` comparison (CSV: one row; Markdown: metric | value, as on the terminal).
    Markdown blocks carry a bold title; CSV blocks a header row only."""
    blocks: list[tuple[str, list[str], list[list[Any]]]] = []
    labels = short_labels([r.source for r in reports])
    per_input = [report_cells(r, max_k(reports)) for r in reports]
    if fmt_name == "csv":
        header = ["source", *(k for c in per_input[0] for k in c.raw)] if per_input else ["source"]
        rows = [[r.source, *_raw(cells)] for r, cells in zip(reports, per_input, strict=True)]
    else:
        header = ["input", *(c.label for c in per_input[0])] if per_input else ["input"]
        rows = [[label, *(c.text for c in cells)] for label, cells in zip(labels, per_input, strict=True)]
    blocks.append(("swerl eval", header, rows))
    if cmp is not None:
        blocks.append((f"compare: A = {cmp.a}, B = {cmp.b}", ["instance_id", "verdict", "A", "B"], compare_rows(cmp)))
    if pair is not None:
        cells = paired_cells(pair)
        if fmt_name == "csv":
            blocks.append(("", ["a", "b", *(k for c in cells for k in c.raw)], [[pair.a, pair.b] + _raw(cells)]))
        else:
            a, b = short_labels([pair.a, pair.b])
            # metric | value, as on the terminal: a dozen columns in one row would not fit a page
            blocks.append((f"paired: B = {b} against A = {a}", ["metric", "value"], [[c.label, c.text] for c in cells]))
    if fmt_name == "csv":
        return "\n".join(_csv(header, rows) for _, header, rows in blocks)
    if fmt_name == "markdown":
        return "\n".join(f"**{title}**\n\n{_markdown(header, rows)}" for title, header, rows in blocks)
    raise ValueError(f"format must be markdown or csv; got {fmt_name!r}")


def _raw(cells: list[Cell]) -> list[Any]:
    return [v for c in cells for v in c.raw.values()]
