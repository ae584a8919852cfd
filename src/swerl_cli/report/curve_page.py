"""The learning-curve section of the report page: curve.py's numbers as inline SVG line charts (charts.py), one line
per run directory, and a table of the same numbers. A chart none of whose runs has a number is left out; the
section says why (curve.py's notes)."""

from __future__ import annotations

from html import escape
from typing import Any

from swerl_cli.report.charts import Series, line_chart
from swerl_cli.report.curve import RunCurve

# (chart id, title, part of a point, key, y range, error key): one chart each, one line per run
_ONE_LINE = (
    ("curve_pass", "pool pass rate ± SE (rollouts of checkpoint k)", "rollouts", "pass", (0.0, 1.0), "pass_sem"),
    ("curve_format", "format errors per turn (rollouts)", "rollouts", "format_error_rate", (0.0, None), None),
    ("curve_samples", "samples kept (update k → k+1)", "update", "samples_kept", (0.0, None), None),
    ("curve_steps", "optimizer steps (update k → k+1)", "update", "steps", (0.0, None), None),
    ("curve_gold", "gold edit-turn log p (probe of checkpoint k)", "probe", "gold_edit_logprob", (None, None), None),
    ("curve_drift", "command-frame drift from the reference (probe)", "probe", "frame_drift", (0.0, None), None),
)
# (chart id, title, part, [(key, series suffix)], y range): two lines per run
_TWO_LINES = (
    ("curve_submit", "episodes ending in submit, and submit precision", "rollouts",
     (("submit_share", "submit share"), ("submit_precision", "precision")), (0.0, 1.0)),
    ("curve_groups", "DAPO groups kept of all (update k → k+1)", "update",
     (("groups_kept", "kept"), ("groups", "all")), (0.0, None)),
)  # fmt: skip
_ORDER = ("curve_pass", "curve_submit", "curve_format", "curve_groups", "curve_samples", "curve_steps", "curve_gold",
          "curve_drift")  # fmt: skip


def _values(curve: RunCurve, part: str, key: str, n: int) -> list[Any]:
    vals = [(p[part] or {}).get(key) for p in curve.points]
    return vals + [None] * (n - len(vals))


def curve_charts(curves: list[RunCurve]) -> list[str]:
    """The section's charts in _ORDER; x: iteration k from 0 to the largest k of any run."""
    n = max((len(c.points) for c in curves), default=0)
    xs = [str(k) for k in range(n)]
    drawn: dict[str, str] = {}

    def draw(cid: str, title: str, series: list[Series], y: tuple[float | None, float | None]) -> None:
        kept = [s for s in series if any(v is not None for v in s.ys)]
        if kept:
            drawn[cid] = line_chart(cid, title, xs, kept, y_min=y[0], y_max=y[1], y_label="x: iteration k")

    for cid, title, part, key, y, err in _ONE_LINE:
        series = [Series(c.name, _values(c, part, key, n), _values(c, part, err, n) if err else None) for c in curves]
        draw(cid, title, series, y)
    for cid, title, part, keys, y in _TWO_LINES:
        draw(cid, title, [Series(f"{c.name} {s}", _values(c, part, key, n)) for c in curves for key, s in keys], y)
    return [drawn[cid] for cid in _ORDER if cid in drawn]


def _f(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


_HEAD = (
    "run", "k", "rollouts", "pass ± SE", "submit share", "submit precision", "format errors / turn",
    "groups kept / all", "samples kept", "steps", "optimizer start", "gold edit log p (Δ)", "frame drift",
)  # fmt: skip


def curve_table(curves: list[RunCurve]) -> str:
    """One row per run and iteration k: the numbers the charts draw."""
    rows = []
    for c in curves:
        for p in c.points:
            r, u, pr = p["rollouts"] or {}, p["update"] or {}, p["probe"] or {}
            cells = [
                c.name,
                str(p["k"]),
                _f(r.get("rollouts")),
                f"{_f(r.get('pass'))} ± {_f(r.get('pass_sem'))}" if r else "–",
                _f(r.get("submit_share")),
                _f(r.get("submit_precision")),
                _f(r.get("format_error_rate"), 4),
                f"{_f(u.get('groups_kept'))} / {_f(u.get('groups'))}" if u else "–",
                _f(u.get("samples_kept")),
                _f(u.get("steps")),
                _f(u.get("optimizer_start")),
                f"{_f(pr.get('gold_edit_logprob'), 4)} ({_f(pr.get('gold_edit_delta'), 4)})" if pr else "–",
                _f(pr.get("frame_drift"), 4),
            ]
            attrs = f' data-run="{escape(c.name)}" data-k="{p["k"]}"'
            rows.append(f"<tr{attrs}>" + "".join(f"<td>{escape(x)}</td>" for x in cells) + "</tr>")
    head = "".join(f"<th>{escape(h)}</th>" for h in _HEAD)
    body = "".join(rows)
    table = f'<table class="summary curve"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    return f'<div class="tablewrap">{table}</div>'


def curve_section(curves: list[RunCurve]) -> str:
    """The page's "Learning curve" section; empty when no run directory was given (graded files only)."""
    if not curves:
        return ""
    notes = "".join(f'<p class="note">{escape(n)}</p>' for c in curves for n in c.notes)
    return (
        '<section id="curve"><h2>Learning curve</h2><p class="meta">Per iteration k: the rollouts of checkpoint k, '
        "the update k → k+1 (dapo.json), the probe of checkpoint k (probe.json).</p>"
        f'{notes}<div class="charts">{"".join(curve_charts(curves))}</div>{curve_table(curves)}</section>'
    )
