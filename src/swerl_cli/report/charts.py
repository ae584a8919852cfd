"""Inline SVG charts (no script, no network): line charts with optional error bars, and stacked bars.

Every data point is an element a test can count: `circle.pt` in line charts, `rect.bar` in bar charts, each with a
`data-series` attribute and a `<title>` tooltip holding its value.
"""

from __future__ import annotations

import math
from html import escape
from typing import NamedTuple

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#475569")
W, H, ML, MR, MT, MB = 440, 230, 48, 12, 30, 40


class Series(NamedTuple):
    """One line: a value per x (None: no point there), optional +- error per x."""

    name: str
    ys: list[float | None]
    err: list[float | None] | None = None


def _fmt(v: float) -> str:
    """Short tick/tooltip numbers: `_fmt(0.125) == "0.125"`, `_fmt(1234.5) == "1234"`, `_fmt(1.5e-6) == "1.5e-06"`."""
    if v == 0 or 1e-3 <= abs(v) < 1e5:
        return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
    return f"{v:.2g}"


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    """Round tick values covering [lo, hi]: `_ticks(0, 1) == [0.0, 0.25, 0.5, 0.75, 1.0]`."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    return [round(start + i * step, 12) for i in range(int(math.ceil((hi - start) / step - 1e-9)) + 1)]


def _frame(
    chart_id: str, title: str, xlabels: list[str], lo: float, hi: float, y_label: str
) -> tuple[list[str], list[float]]:
    ticks = _ticks(lo, hi)
    lo, hi = ticks[0], ticks[-1]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" role="img" aria-label="{escape(title)}">',
        f'<text x="{ML}" y="16" class="title">{escape(title)}</text>',
    ]
    for t in ticks:
        y = _y(t, lo, hi)
        parts.append(f'<line class="grid" x1="{ML}" x2="{W - MR}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{ML - 4}" y="{y + 3:.1f}" text-anchor="end">{_fmt(t)}</text>')
    step = max(1, math.ceil(len(xlabels) / 10))
    for i, label in enumerate(xlabels):
        if i % step == 0 or i == len(xlabels) - 1:
            parts.append(
                f'<text class="tick" x="{_x(i, len(xlabels)):.1f}" y="{H - MB + 14}" text-anchor="middle">'
                f"{escape(label)}</text>"
            )
    if y_label:
        parts.append(f'<text class="tick" x="{ML}" y="{H - 6}">{escape(y_label)}</text>')
    return parts, [lo, hi]


def _x(i: int, n: int) -> float:
    return ML + (W - ML - MR) * ((i + 0.5) / n if n else 0.5)


def _y(v: float, lo: float, hi: float) -> float:
    return MT + (H - MT - MB) * (1 - (v - lo) / (hi - lo or 1.0))


def _legend(names: list[str]) -> str:
    keys = (
        f'<span><i style="background:{PALETTE[k % len(PALETTE)]}"></i>{escape(n)}</span>' for k, n in enumerate(names)
    )
    return "<figcaption>" + "".join(keys) + "</figcaption>"


def line_chart(
    chart_id: str,
    title: str,
    xlabels: list[str],
    series: list[Series],
    *,
    y_min: float | None = None,
    y_max: float | None = None,
    y_label: str = "",
) -> str:
    """A figure with one polyline per series, a circle per non-None value, error bars where `err` is given."""
    vals = [v for s in series for v in s.ys if v is not None]
    spans = [
        (y - (e or 0.0), y + (e or 0.0))
        for s in series
        for y, e in zip(s.ys, s.err or [None] * len(s.ys), strict=True)
        if y is not None
    ]
    lo = y_min if y_min is not None else min([a for a, _ in spans] + [0.0] if vals else [0.0])
    hi = y_max if y_max is not None else max([b for _, b in spans] + [lo + 1e-9] if vals else [1.0])
    parts, (lo, hi) = _frame(chart_id, title, xlabels, lo, hi, y_label)
    n = len(xlabels)
    for k, s in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        # the first line wide and solid, the others narrower and dashed: equal series (a reward with no penalty
        # applied) stay visible on top of each other instead of one hiding the other
        stroke = 'stroke-width="3"' if k == 0 else f'stroke-width="1.5" stroke-dasharray="{4 + k} 3"'
        runs: list[list[str]] = [[]]
        for i, y in enumerate(s.ys):
            if y is None:
                runs.append([])
                continue
            runs[-1].append(f"{_x(i, n):.1f},{_y(y, lo, hi):.1f}")
        for pts in runs:
            if len(pts) > 1:
                parts.append(f'<polyline fill="none" stroke="{color}" {stroke} points="{" ".join(pts)}"/>')
        for i, y in enumerate(s.ys):
            if y is None:
                continue
            x, cy = _x(i, n), _y(y, lo, hi)
            e = s.err[i] if s.err else None
            tip = f"{s.name} @ {xlabels[i]}: {_fmt(y)}" + (f" ± {_fmt(e)}" if e else "")
            if e:
                parts.append(
                    f'<line class="err" stroke="{color}" x1="{x:.1f}" x2="{x:.1f}" '
                    f'y1="{_y(y - e, lo, hi):.1f}" y2="{_y(y + e, lo, hi):.1f}"/>'
                )
            parts.append(
                f'<circle class="pt" data-series="{escape(s.name)}" data-value="{y!r}" cx="{x:.1f}" cy="{cy:.1f}" '
                f'r="{4.5 if k == 0 else 2.5}" fill="{color}"><title>{escape(tip)}</title></circle>'
            )
    return _figure(chart_id, parts, _legend([s.name for s in series]))


def stacked_bars(
    chart_id: str, title: str, xlabels: list[str], parts_by_name: dict[str, list[float]], y_label=""
) -> str:
    """A figure with one stacked bar per x; each non-zero part is a `rect.bar`."""
    totals = [sum(v[i] for v in parts_by_name.values()) for i in range(len(xlabels))]
    parts, (lo, hi) = _frame(chart_id, title, xlabels, 0.0, max(totals, default=1.0) or 1.0, y_label)
    n = len(xlabels)
    width = min(36.0, (W - ML - MR) / max(n, 1) * 0.7)
    base = [0.0] * n
    for k, (name, values) in enumerate(parts_by_name.items()):
        color = PALETTE[k % len(PALETTE)]
        for i, v in enumerate(values):
            if not v:
                continue
            top, bottom = _y(base[i] + v, lo, hi), _y(base[i], lo, hi)
            parts.append(
                f'<rect class="bar" data-series="{escape(name)}" data-value="{v!r}" x="{_x(i, n) - width / 2:.1f}" '
                f'y="{top:.1f}" width="{width:.1f}" height="{max(bottom - top, 0.5):.1f}" fill="{color}">'
                f"<title>{escape(f'{name} @ {xlabels[i]}: {_fmt(v)}')}</title></rect>"
            )
            base[i] += v
    return _figure(chart_id, parts, _legend(list(parts_by_name)))


# metrics.jsonl fields drawn per optimizer step (x: the global step over all iterations), in this order
STEP_METRICS = (
    ("loss", "loss"),
    ("entropy", "policy entropy of the sampled tokens (mean -log p)"),
    ("grad_norm", "gradient norm"),
    ("lr", "learning rate"),
)


def step_charts(steps: list[dict]) -> list[str]:
    """One line chart per STEP_METRICS field that some step has (`step_loss`, `step_entropy`, ...); a run whose
    metrics.jsonl predates a field simply has no chart for it."""
    xs = [str(s["global_step"]) for s in steps]
    out = []
    for key, title in STEP_METRICS:
        ys = [_number(s.get(key)) for s in steps]
        if any(y is not None for y in ys):
            out.append(line_chart(f"step_{key}", f"{title} per optimizer step", xs, [Series(key, ys)]))
    return out


def _number(v: object) -> float | None:
    """A finite number of a metrics row, else None (no point): `_number(float("nan")) is None`."""
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else None  # type: ignore[arg-type]


def _figure(chart_id: str, parts: list[str], legend: str) -> str:
    return f'<figure class="chart" data-chart="{escape(chart_id)}">' + "".join(parts) + "</svg>" + legend + "</figure>"
