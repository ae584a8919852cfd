"""The learning curve of `swerl report` (issue 41 item 4): per-iteration numbers of a constructed paper-mini-gain
run against hand-computed values, the curves and table on the page, absent probes skipped, bad probes refused."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swerl_cli.cli import app
from swerl_cli.report.build import build_report
from swerl_cli.report.page import render_page
from tests.report.records import dapo_summary, graded, make_run, write_jsonl


def _dapo(groups: int, dropped: int, kept: int, steps: int, start: str) -> dict:
    d = dapo_summary(steps, groups, dropped, 0.0, 0.0, 0.001)
    d["counts"]["samples_kept"] = kept
    d["config"]["dapo"] = {"optimizer_start": start}
    return d


def _probe(path: Path, edit: float, delta: float, drift: float, label: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {"label": label, "checkpoint": f"ckpt-{label}", "gold_edit_logprob": edit, "gold_edit_delta": delta,
           "gold_action_logprob": edit / 2, "gold_delta": delta / 2,
           "frame_drift": drift, "frame_delta": -drift}  # fmt: skip
    path.write_text(json.dumps(row) + "\n")


def gain_run(root: Path) -> Path:
    """RUN/dapo-s0 in make paper-mini-gain's layout: 3 iterations of 4 rollouts, updates after iterations 0 and 1,
    probes of checkpoints 1..3 in iter-k/ and of checkpoint 0 (RFT) in RUN/rft/probe.json."""
    d = root / "dapo-s0"
    it0 = [
        graded("T0", 0, run="iter-0", resolved=True, turns=2),
        graded("T0", 1, run="iter-0", turns=3, format_error_turn=1),
        graded("T1", 0, run="iter-0", turns=4, format_error_turn=0, exit_status="max_turns"),
        graded("T1", 1, run="iter-0", resolved=True, turns=3),
    ]
    it1 = [graded(f"T{i // 2}", i % 2, run="iter-1", resolved=i != 3, turns=2) for i in range(4)]
    it2 = [graded(f"T{i // 2}", i % 2, run="iter-2", resolved=True, turns=1) for i in range(4)]
    for k, recs in enumerate((it0, it1, it2)):
        write_jsonl(d / f"iter-{k}" / "graded.jsonl", recs)
    (d / "iter-0" / "dapo.json").write_text(json.dumps(_dapo(2, 0, 8, 2, "fresh")))
    (d / "iter-1" / "dapo.json").write_text(json.dumps(_dapo(2, 1, 4, 1, "checkpoint")))
    _probe(root / "rft" / "probe.json", -1.5, 0.0, 0.0, "RFT")
    _probe(d / "iter-1" / "probe.json", -1.25, 0.25, 0.02, "DAPO-1")
    _probe(d / "iter-2" / "probe.json", -1.0, 0.5, 0.03, "DAPO-2")
    _probe(d / "iter-3" / "probe.json", -0.75, 0.75, 0.05, "DAPO-3")  # the last checkpoint: no rollouts
    return d


def test_curve_numbers_match_hand_computed_values(tmp_path: Path):
    run = gain_run(tmp_path / "RUN")
    (curve,) = build_report([str(run)]).curves
    assert curve.name == "dapo-s0"
    assert [p["k"] for p in curve.points] == [0, 1, 2, 3]
    r = [p["rollouts"] for p in curve.points]
    # iteration 0: 2 of 4 resolved, SE sqrt(0.25 / 3); 3 submitted, 2 of them resolved; 2 format errors in 12 turns
    assert (r[0]["rollouts"], r[0]["pass"]) == (4, 0.5)
    assert r[0]["pass_sem"] == pytest.approx(math.sqrt(0.25 / 3))
    assert (r[0]["submit_share"], r[0]["submit_precision"]) == (0.75, pytest.approx(2 / 3))
    assert (r[0]["format_errors"], r[0]["turns"], r[0]["format_error_rate"]) == (2, 12, pytest.approx(1 / 6))
    # iteration 1: 3 of 4, SE sqrt(0.75 * 0.25 / 3) = 0.25; all submitted; no format error in 8 turns
    assert (r[1]["pass"], r[1]["pass_sem"]) == (0.75, pytest.approx(0.25))
    assert (r[1]["submit_share"], r[1]["submit_precision"], r[1]["format_error_rate"]) == (1.0, 0.75, 0.0)
    assert (r[2]["pass"], r[2]["pass_sem"], r[2]["submit_precision"]) == (1.0, 0.0, 1.0)
    assert r[3] is None
    u = [p["update"] for p in curve.points]
    assert u[0] == {"groups": 2, "groups_kept": 2, "samples_kept": 8, "steps": 2, "optimizer_start": "fresh"}
    assert u[1] == {"groups": 2, "groups_kept": 1, "samples_kept": 4, "steps": 1, "optimizer_start": "checkpoint"}
    assert u[2:] == [None, None]
    probes = [p["probe"] for p in curve.points]
    assert [p["gold_edit_logprob"] for p in probes] == [-1.5, -1.25, -1.0, -0.75]
    assert [p["frame_drift"] for p in probes] == [0.0, 0.02, 0.03, 0.05]
    assert probes[0]["path"] == str(tmp_path / "RUN" / "rft" / "probe.json")  # checkpoint 0 lives beside the run
    assert curve.notes == [f"dapo-s0: checkpoint 0's probe is {tmp_path / 'RUN' / 'rft' / 'probe.json'}"]
    # iter-0/probe.json, when present, is checkpoint 0's
    _probe(run / "iter-0" / "probe.json", -2.0, 0.0, 0.0, "start")
    (curve,) = build_report([str(run)]).curves
    assert curve.points[0]["probe"]["gold_edit_logprob"] == -2.0
    assert curve.notes == []


def _points(html: str, chart: str) -> list[tuple[str, str]]:
    fig = html.split(f'data-chart="{chart}"', 1)[1].split("</figure>", 1)[0]
    return re.findall(r'class="pt" data-series="([^"]*)" data-value="([^"]*)"', fig)


def test_page_draws_the_curves_and_the_table(tmp_path: Path):
    html = render_page(build_report([str(gain_run(tmp_path / "RUN"))]))
    assert 'id="curve"' in html
    assert _points(html, "curve_pass") == [("dapo-s0", "0.5"), ("dapo-s0", "0.75"), ("dapo-s0", "1.0")]
    fig = html.split('data-chart="curve_pass"', 1)[1].split("</figure>", 1)[0]
    assert fig.count('class="err"') == 2  # iteration 2's SE is 0: no bar
    assert _points(html, "curve_gold") == [("dapo-s0", v) for v in ("-1.5", "-1.25", "-1.0", "-0.75")]
    assert _points(html, "curve_drift") == [("dapo-s0", v) for v in ("0.0", "0.02", "0.03", "0.05")]
    assert _points(html, "curve_groups") == [("dapo-s0 kept", "2"), ("dapo-s0 kept", "1"), ("dapo-s0 all", "2"),
                                             ("dapo-s0 all", "2")]  # fmt: skip
    assert _points(html, "curve_steps") == [("dapo-s0", "2"), ("dapo-s0", "1")]
    assert [v for _, v in _points(html, "curve_submit")] == ["0.75", "1.0", "1.0", "0.6666666666666666", "0.75", "1.0"]
    row = html.split('<tr data-run="dapo-s0" data-k="0">', 1)[1].split("</tr>", 1)[0]
    cells = re.findall(r"<td>([^<]*)</td>", row)
    assert cells == ["dapo-s0", "0", "4", "0.500 ± 0.289", "0.750", "0.667", "0.1667", "2 / 2", "8", "2", "fresh",
                     "-1.5000 (0.0000)", "0.0000"]  # fmt: skip
    assert html.count('<tr data-run="dapo-s0"') == 4


def test_absent_probes_and_updates_are_skipped_with_a_note(tmp_path: Path):
    run = make_run(tmp_path / "runs", [[1, 4], [2, 4], [4, 4]])  # make rl's layout: no probe.json
    for k in range(3):
        (run / f"iter-{k}" / "dapo.json").unlink()
    data = build_report([str(run)])
    (curve,) = data.curves
    assert [p["probe"] for p in curve.points] == [None, None, None]
    assert curve.notes == [
        "runs: no iter-k/dapo.json: its curves are skipped",
        "runs: no probe.json: its curves are skipped",
    ]
    html = render_page(data)
    assert "runs: no probe.json: its curves are skipped" in html
    assert 'data-chart="curve_gold"' not in html
    assert 'data-chart="curve_groups"' not in html
    assert [v for _, v in _points(html, "curve_pass")] == ["0.625", "0.75", "1.0"]
    files = build_report([str(write_jsonl(tmp_path / "g.jsonl", [graded("T0", 0)]))])  # graded files: no section
    assert files.curves == []
    assert 'id="curve"' not in render_page(files)


def test_several_runs_one_line_each(tmp_path: Path):
    a = gain_run(tmp_path / "RUN")
    b = make_run(tmp_path / "other", [[4, 4]])
    html = render_page(build_report([str(a), str(b)]))
    assert _points(html, "curve_pass") == [
        ("dapo-s0", "0.5"),
        ("dapo-s0", "0.75"),
        ("dapo-s0", "1.0"),
        ("other", "1.0"),
    ]
    assert {s for s, _ in _points(html, "curve_gold")} == {"dapo-s0"}
    evals = tmp_path / "base" / "iter-0"  # an eval-only directory: one note, no line
    write_jsonl(evals / "eval-graded.jsonl", [graded("T0", 0, run="eval-0")])
    data = build_report([str(a), str(evals.parent)])
    assert data.curves[1].notes == ["base: no rollouts, updates or probes: no learning curve"]
    assert {s for s, _ in _points(render_page(data), "curve_pass")} == {"dapo-s0"}


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("probe.json", '{"gold_edit_logprob": "high"}', "field 'gold_edit_logprob': expected a finite number"),
        ("probe.json", '{"frame_drift": NaN}', "field 'frame_drift': expected a finite number"),
        ("probe.json", "[1, 2]", "expected a JSON object"),
        ("probe.json", '{"gold_edit', "not a readable JSON probe record"),
        ("dapo.json", '{"config": {"dapo": {"optimizer_start": 3}}}', "field 'config.dapo.optimizer_start'"),
    ],
)
def test_bad_probe_or_dapo_summary_is_one_line_exit_3(tmp_path: Path, name: str, text: str, where: str):
    run = gain_run(tmp_path / "RUN")
    bad = run / "iter-1" / name
    bad.write_text(text)
    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", str(run), "-o", str(out)])
    assert res.exit_code == 3, res.output
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(f"swerl report: {bad}: ")
    assert where in last
    assert "Traceback" not in res.stderr
    assert not out.exists()


def test_bad_format_error_count_is_located(tmp_path: Path):
    run = gain_run(tmp_path / "RUN")
    recs = [graded("T0", 0, run="iter-2")]
    recs[0]["stats"]["format_errors"] = "two"
    path = write_jsonl(run / "iter-2" / "graded.jsonl", recs)
    res = CliRunner().invoke(app, ["report", str(run), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 3
    assert res.stderr.strip().splitlines()[-1].startswith(f"swerl report: {path}:1: field 'stats.format_errors'")


def test_a_probe_cannot_be_the_output(tmp_path: Path):
    run = gain_run(tmp_path / "RUN")
    probe = run / "iter-1" / "probe.json"
    before = probe.read_bytes()
    res = CliRunner().invoke(app, ["report", str(run), "-o", str(probe)])
    assert res.exit_code == 2, res.output
    assert probe.read_bytes() == before
