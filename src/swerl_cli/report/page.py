"""ReportData -> one self-contained HTML page: inline CSS, inline SVG charts, an inline viewer script.

Nothing is fetched at view time. The viewer's index (one short row per record) is one JSON block. Record bodies go
in chunks of CHUNK records, each gzip-compressed and base64-encoded in its own `<script>` element that the browser
keeps as text: the viewer inflates a chunk (DecompressionStream) only when one of its records is selected, so a
page with 10,000 trajectories opens as fast as its charts render and stays a fraction of the raw JSON size.
"""

from __future__ import annotations

import base64
import gzip
import json
from html import escape
from importlib import resources
from typing import Any

from swerl_cli import __version__
from swerl_cli.report.build import ReportData
from swerl_cli.report.charts import Series, line_chart, stacked_bars, step_charts
from swerl_cli.report.curve_page import curve_section

CHUNK = 32  # records per compressed body chunk


def _asset(name: str) -> str:
    return resources.files("swerl_cli.report").joinpath("assets").joinpath(name).read_text(encoding="utf-8")


def _json_script(text: str) -> str:
    """JSON text made safe inside <script>: no '<' can close the element or open a comment."""
    return text.replace("<", "\\u003c")


def _get(its: list[dict[str, Any]], split: str, key: str, sub: str | None = None) -> list[float | None]:
    out = []
    for it in its:
        v = (it.get(split) or {}).get(key)
        out.append(v.get(sub) if isinstance(v, dict) and sub else v)
    return out


def _count(n: int, noun: str) -> str:
    """`_count(1, "task") == "1 task"`, `_count(3, "task") == "3 tasks"`."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


class _Charts:
    """The page's charts in order; a line chart whose every series is empty is left out."""

    def __init__(self, data: ReportData):
        self.data, self.its, self.xs = data, data.iterations, [it["label"] for it in data.iterations]
        self.out: list[str] = []

    def line(self, cid: str, title: str, series: list[Series], **kw: Any) -> None:
        kept = [s for s in series if any(v is not None for v in s.ys)]
        if kept:
            self.out.append(line_chart(cid, title, self.xs, kept, **kw))

    def bars(self, cid: str, title: str, stacks: dict[str, list[Any]], **kw: Any) -> None:
        self.out.append(stacked_bars(cid, title, self.xs, stacks, **kw))

    def outcomes(self) -> None:
        """pass@1, mean reward with and without the step penalty, resolved share."""
        its, data = self.its, self.data
        has_eval = any(it["eval"] for it in its)
        evals = [Series("eval", _get(its, "eval", "pass1"), _get(its, "eval", "pass1_sem"))] if has_eval else []
        train = Series("train", _get(its, "train", "pass1"), _get(its, "train", "pass1_sem"))
        self.line("pass1", "pass@1 ± SEM", [train, *evals], y_min=0.0, y_max=1.0)
        self.line(
            "reward",
            f"mean reward (step penalty: l_thr {data.l_thr}, t_max {data.t_max})",
            [
                Series("test reward", _get(its, "train", "reward")),
                Series("with penalty", _get(its, "train", "reward_penalised")),
            ],
        )
        shares = [Series(split, _get(its, split, "resolved_share")) for split in ("train", "eval")]
        self.line("resolved", "resolved share of all records", shares, y_min=0.0, y_max=1.0)

    def updates(self) -> None:
        """The DAPO summaries: groups kept/dropped, steps, clip fractions, logprob gap, staleness."""
        if not any(it["dapo"] for it in self.its):
            return
        d = [it["dapo"] or {} for it in self.its]
        groups = {"kept": [g.get("groups_kept") or 0 for g in d], "dropped": [g.get("groups_dropped") or 0 for g in d]}
        self.bars("groups", "DAPO groups kept / dropped (equal rewards)", groups)
        self.line("steps", "optimizer steps", [Series("steps", [g.get("steps") for g in d])], y_min=0.0)
        clip = [Series(k, [g.get(f"clip_frac_{k}") for g in d]) for k in ("low", "high")]
        self.line("clip", "clip fractions (tokens)", clip, y_min=0.0)
        self.line(
            "logprob_gap", "mean |logprob trainer - sampler|", [Series("gap", [g.get("logprob_diff") for g in d])]
        )
        if any(g.get("staleness") for g in d):
            stale = [Series(k, [(g.get("staleness") or {}).get(k) for g in d]) for k in ("mean", "max")]
            self.line("staleness", "staleness (optimizer steps, per update)", stale, y_min=0.0)

    def rollouts(self) -> None:
        """Turns and tokens percentiles, the exit-status mix, seconds per stage, loss per optimizer step."""
        its = self.its
        for key, title in (("turns", "turns per trajectory"), ("tokens", "tokens per trajectory")):
            self.line(
                key,
                f"{title} (train)",
                [Series(s, _get(its, "train", key, s)) for s in ("p50", "p90", "max")],
                y_min=0.0,
            )
        reasons = sorted({r for it in its if it["train"] for r in it["train"].get("reasons", {})})
        if reasons:
            why = {r: [(it["train"] or {}).get("reasons", {}).get(r, 0) for it in its] for r in reasons}
            self.bars("reasons", "why patches scored 0 (train rollouts, grade.reason)", why)
        statuses = sorted({k for it in its if it["train"] for k in it["train"]["exit_status"]})
        if statuses:
            mix = {k: [(it["train"] or {}).get("exit_status", {}).get(k, 0) for it in its] for k in statuses}
            self.bars("exit_status", "exit status (train rollouts)", mix)
        stages: dict[str, list[Any]] = {
            "episodes (sum)": _get(its, "train", "episode_s"),
            "grading (sum)": _get(its, "train", "grade_s"),
        }
        for key in ("engine_init_s", "old_logprob_pass_s", "steps_s", "save_s"):
            stages[f"dapo {key.removesuffix('_s').replace('_', ' ')}"] = [
                ((it["dapo"] or {}).get("timing") or {}).get(key) for it in its
            ]
        stages = {k: [v or 0.0 for v in vs] for k, vs in stages.items() if any(vs)}
        if stages:
            self.bars("time", "seconds per stage", stages, y_label="episodes/grading: summed over records")
        if self.data.steps:  # loss, entropy, grad norm and lr per optimizer step, all iterations
            self.out.extend(step_charts(self.data.steps))


def charts(data: ReportData) -> list[str]:
    """Every across-iteration chart of the page, in order (empty series are left out)."""
    c = _Charts(data)
    c.outcomes()
    c.updates()
    c.rollouts()
    return c.out


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def summary_table(data: ReportData) -> str:
    """One row per iteration: the headline numbers."""
    head = (
        "iteration", "records", "pass@1 train", "pass@1 eval", "reward", "reward w/ penalty", "groups kept/dropped",
        "steps", "clip low/high", "logprob gap", "staleness mean/max",
    )  # fmt: skip
    rows = []
    for it in data.iterations:
        t, e, d = it["train"] or {}, it["eval"] or {}, it["dapo"] or {}
        cells = [
            it["label"],
            _fmt(t.get("n", 0) + e.get("n", 0)),
            f"{_fmt(t.get('pass1'))} ± {_fmt(t.get('pass1_sem'))}" if t else "–",
            f"{_fmt(e.get('pass1'))} ± {_fmt(e.get('pass1_sem'))}" if e else "–",
            _fmt(t.get("reward")),
            _fmt(t.get("reward_penalised")),
            f"{_fmt(d.get('groups_kept'))} / {_fmt(d.get('groups_dropped'))}" if d else "–",
            _fmt(d.get("steps")),
            f"{_fmt(d.get('clip_frac_low'))} / {_fmt(d.get('clip_frac_high'))}" if d else "–",
            _fmt(d.get("logprob_diff"), 4),
            f"{_fmt(st.get('mean'))} / {_fmt(st.get('max'))}" if (st := d.get("staleness") or {}) else "–",
        ]
        rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return (
        '<table class="summary"><thead><tr>'
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def reasons_table(data: ReportData) -> str:
    """Per iteration and split: records per `grade.reason` (why a patch scored 0) and the static audit's finding
    codes (records per code); '' when no record has either."""
    rows = [(it["label"], split, it[split]) for it in data.iterations for split in ("train", "eval") if it[split]]
    reasons = sorted({r for *_, st in rows for r in st.get("reasons", {})})
    if not reasons and not any(st.get("audit_codes") for *_, st in rows):
        return ""
    head = ["iteration", "split", "records", *reasons, "audit findings (records per code)"]
    body = []
    for label, split, st in rows:
        codes = ", ".join(f"{c} {n}" for c, n in st.get("audit_codes", {}).items()) or "–"
        cells = [label, split, str(st["n"]), *(str(st.get("reasons", {}).get(r, 0)) for r in reasons), codes]
        body.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return (
        '<h3>Why patches scored 0</h3><table class="summary reasons"><thead><tr>'
        + "".join(f"<th>{escape(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )


def heat_table(data: ReportData, split: str) -> str:
    """Per task (rows) and iteration (columns): solve rate as a coloured cell; a click opens that task's records."""
    heat = data.heat[split]
    if not heat["rows"]:
        return ""
    head = "".join(f"<th>{escape(c)}</th>" for c in heat["columns"])
    rows = []
    for task, cells in heat["rows"].items():
        tds = []
        for i, nc in enumerate(cells):
            if nc is None or nc[0] == 0:
                tds.append('<td class="na">–</td>')
                continue
            rate = nc[1] / nc[0]
            tds.append(
                f'<td class="cell" data-iter="{i}" style="background:hsl({int(120 * rate)},70%,{88 - 30 * rate:.0f}%)"'
                f' title="{escape(task)} @ {escape(heat["columns"][i])}: {nc[1]}/{nc[0]}">{nc[1]}/{nc[0]}</td>'
            )
        rows.append(f'<tr data-task="{escape(task)}"><th>{escape(task)}</th>{"".join(tds)}</tr>')
    return (
        f'<h3>{split} solve rate per task</h3><div class="heatwrap"><table class="heat" data-split="{split}">'
        f"<thead><tr><th>task</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def body_chunks(data: ReportData) -> list[str]:
    """Base64 of gzip(JSON array of CHUNK bodies), one string per chunk (deterministic: no timestamp)."""
    out = []
    for start in range(0, len(data.bodies), CHUNK):
        raw = ("[" + ",".join(data.bodies[start : start + CHUNK]) + "]").encode()
        out.append(base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii"))
    return out


def render_page(data: ReportData) -> str:
    """The whole HTML document."""
    index = {
        "iterations": [it["label"] for it in data.iterations],
        "tasks": data.tasks,
        "systems": data.systems,
        "index": data.index,
        "chunk": CHUNK,
    }
    bodies = "\n".join(
        f'<script type="application/x-swerl-chunk" id="c{c}">{chunk}</script>'
        for c, chunk in enumerate(body_chunks(data))
    )
    n_tasks, n_rec = len(data.tasks), len(data.index)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>swerl report: {escape(data.title)}</title>
<style>{_asset("report.css")}</style></head>
<body>
<header><h1>swerl report</h1><p class="meta">{escape(data.title)} · {_count(len(data.iterations), "iteration")} ·
{_count(n_rec, "record")} · {_count(n_tasks, "task")} · swerl {__version__}</p></header>
<section id="summary"><h2>Across iterations</h2>{summary_table(data)}{reasons_table(data)}
<div class="charts">{"".join(charts(data))}</div></section>
{curve_section(data.curves)}
<section id="tasks"><h2>Per task</h2>{heat_table(data, "train")}{heat_table(data, "eval")}</section>
<section id="viewer"><h2>Trajectories</h2>
<div class="filters">
<label>iteration <select id="f-iter"></select></label>
<label>split <select id="f-split"><option value="">all</option><option value="0">train</option>
<option value="1">eval</option></select></label>
<label>task <select id="f-task"></select></label>
<label>status <select id="f-status"></select></label>
<label>tamper <select id="f-tamper"></select></label>
<span id="f-count"></span></div>
<div class="panes"><div class="list"><table id="list"><thead><tr><th>iter</th><th>task</th><th>#</th>
<th>status</th><th>turns</th><th>exit</th><th>tamper</th></tr></thead><tbody></tbody></table></div>
<div id="detail" class="detail"><p class="hint">Pick a trajectory on the left.</p></div></div>
</section>
<script type="application/json" id="swerl-index">{_json_script(json.dumps(index, separators=(",", ":")))}</script>
{bodies}
<script>{_asset("report.js")}</script>
</body></html>
"""
