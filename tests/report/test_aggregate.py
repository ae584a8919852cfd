"""Report aggregation against hand-computed values; viewer bodies; SVG point counts; CLI errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swerl_cli.cli import app
from swerl_cli.report.aggregate import split_stats
from swerl_cli.report.build import build_report
from swerl_cli.report.charts import Series, line_chart, stacked_bars
from swerl_cli.report.viewer import body_of, cut
from swerl_cli.streams.graded import read_graded
from swerl_cli.streams.records import Located
from swerl_cli.training.advantages import select_samples
from swerl_cli.training.dapo_config import DapoConfig
from tests.report.records import graded, make_run, write_jsonl


def _samples(recs):
    return [read_graded(Located("f.jsonl", i + 1, r)) for i, r in enumerate(recs)]


def test_split_stats_match_hand_computed_values():
    recs = [
        graded("T0", 0, resolved=True, turns=1),
        graded("T0", 1, turns=3, exit_status="max_turns"),
        graded("T1", 0, resolved=True, turns=2),
        graded("T1", 1, turns=1, status="error"),  # grade error: out of pass@1 and reward
        graded("T1", 2, turns=1, exit_status="error"),  # collect error: in pass@1 (as eval), out of reward
    ]
    st = split_stats(_samples(recs), l_thr=2, t_max=4)
    assert st["n"] == 5
    assert st["errors"] == 1
    assert st["pass1"] == 0.5  # 2 of the 4 counted
    assert st["pass1_sem"] == pytest.approx(math.sqrt(1 / 12))  # sqrt((4 * 0.25 / 3) / 4)
    assert st["reward"] == pytest.approx(2 / 3)
    assert st["reward_penalised"] == pytest.approx((1 - 0.5 + 1) / 3)  # turns 3: (2 - 3) / (4 - 2)
    assert st["resolved_share"] == pytest.approx(2 / 5)
    assert st["exit_status"] == {"error": 1, "max_turns": 1, "submitted": 3}
    assert st["turns"] == {"n": 5, "mean": 1.6, "p50": 1, "p90": pytest.approx(2.6), "max": 3}
    assert st["per_task"] == {"T0": [2, 1], "T1": [2, 1]}
    assert st["episode_s"] == 10.0
    assert st["grade_s"] == 7.5


def test_run_directory_iterations_heat_map_and_steps(tmp_path: Path):
    run = make_run(tmp_path / "runs", [[1, 4], [2, 4], [4, 4]])
    data = build_report([str(run)])
    assert [it["label"] for it in data.iterations] == ["iter-0", "iter-1", "iter-2"]
    assert (data.l_thr, data.t_max) == (2, 4)  # from dapo.json's config
    assert [it["train"]["pass1"] for it in data.iterations] == [5 / 8, 6 / 8, 1.0]
    assert data.iterations[0]["eval"] is None
    assert [it["eval"]["pass1"] for it in data.iterations[1:]] == [0.5, 1.0]
    # iter-0, turns 1,2,3,1 per task: T0 rewards 1, 0, -0.5, 0; T1 1, 1, 0.5, 1 -> 4 / 8
    assert data.iterations[0]["train"]["reward_penalised"] == pytest.approx(0.5)
    assert data.heat["train"]["rows"] == {"T0": [[4, 1], [4, 2], [4, 4]], "T1": [[4, 4], [4, 4], [4, 4]]}
    assert data.heat["eval"]["rows"]["T0"] == [None, [1, 0], [1, 1]]
    assert [it["dapo"]["groups_kept"] for it in data.iterations] == [1, 1, 1]
    assert [s["global_step"] for s in data.steps] == [1, 2, 3, 4, 5, 6]
    assert len(data.index) == len(data.bodies) == 3 * 8 + 2 * 2
    assert data.systems
    assert len(data.systems) == 1


def test_several_run_directories_label_iterations_by_directory(tmp_path: Path):
    """make paper-mini reports RUN/base (the base model's eval) beside RUN: both have an iter-0, which must differ."""
    base = make_run(tmp_path / "base", [[1, 4]])
    run = make_run(tmp_path / "pm", [[1, 4], [2, 4]])
    data = build_report([str(base), str(run)])
    assert [it["label"] for it in data.iterations] == ["base/iter-0", "pm/iter-0", "pm/iter-1"]
    twins = [make_run(tmp_path / s / "runs", [[1, 4]]) for s in ("a", "b")]  # same directory name: the path as given
    labels = [it["label"] for it in build_report([f"{t}/" for t in twins]).iterations]
    assert labels == [f"{t}/iter-0" for t in twins]
    assert [it["label"] for it in build_report([str(run)]).iterations] == ["iter-0", "iter-1"]  # one run: unchanged


def test_penalised_reward_equals_what_dapo_trains_on(tmp_path: Path):
    recs = [graded("T0", i, resolved=i % 2 == 0, turns=1 + i) for i in range(4)]
    recs += [graded("T1", i, turns=4 - i, status="error" if i == 3 else None) for i in range(4)]
    sel = select_samples((Located("f", i, r) for i, r in enumerate(recs)), DapoConfig(l_thr=2, t_max=4, group_size=4))
    st = split_stats(_samples(recs), l_thr=2, t_max=4)
    assert st["reward_penalised"] == pytest.approx(sum(sel.rewards) / len(sel.rewards))


def test_viewer_body_splits_turns_and_marks_format_errors():
    systems: dict[str, int] = {}
    rec = graded("T0", 0, resolved=True, turns=3, format_error_turn=1, observation="x" * 80)
    body = body_of(rec, systems, max_chars=30)
    body_of(graded("T1", 0), systems)
    assert len(systems) == 1
    assert body["system"] == 0
    turns = [m for m in body["messages"] if m["role"] == "assistant"]
    assert [t["cmd"] for t in turns] == ["cat greet/core.py  # step 0", None, "submit"]
    assert [t["format_error"] for t in turns] == [False, True, False]
    assert turns[0]["text"] == "Reasoning for turn 0 of T0."
    assert turns[0]["tokens"] == 10
    assert body["messages"][2]["text"] == cut("x" * 80 + " 0", 30)
    assert body["grade"]["FAIL_TO_PASS"] == [["tests/test_greet.py::test_case", True, "PASSED"]]
    assert body["patch"].startswith("diff --git")
    assert "token_ids" not in json.dumps(body)


def test_cut_keeps_head_and_tail():
    assert cut("abcdefghij", 6) == "abc\n[... 4 characters cut ...]\nhij"
    assert cut("abc", 6) == "abc"


def test_charts_draw_one_element_per_value():
    svg = line_chart(
        "c", "t", ["a", "b", "c"], [Series("s1", [0.1, None, 0.3], [0.05, None, 0.0]), Series("s2", [1, 2, 3])]
    )
    assert svg.count('class="pt" data-series="s1"') == 2
    assert svg.count('class="pt" data-series="s2"') == 3
    assert svg.count('class="err"') == 1
    bars = stacked_bars("b", "t", ["a", "b"], {"kept": [1, 0], "dropped": [2, 3]})
    assert bars.count('class="bar"') == 3


def test_report_bad_record_is_one_located_line_exit_3(tmp_path: Path):
    bad = graded("T0", 0)
    bad["grade"]["status"] = "passed"
    path = write_jsonl(tmp_path / "g.jsonl", [graded("T0", 1), bad])
    res = CliRunner().invoke(app, ["report", str(path), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 3
    assert (
        res.stderr.strip().splitlines()[-1].startswith(f"swerl report: {path}:2: field 'grade.status': unknown status")
    )
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "r.html").exists()
    res = CliRunner().invoke(app, ["report", str(tmp_path / "nope"), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 3
    assert "no such file or directory" in res.stderr
    res = CliRunner().invoke(app, ["report", str(tmp_path), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 3
    assert "no iter-k/graded.jsonl" in res.stderr


def test_page_text_cannot_close_its_script_elements(tmp_path: Path):
    from swerl_cli.report.page import render_page

    evil = "</script><script>alert(1)</script><!--"
    rec = graded(f"T{evil}", 0, observation=evil)
    data = build_report([str(write_jsonl(tmp_path / "g.jsonl", [rec]))])
    html = render_page(data)
    # the index, one body chunk and the viewer script: three elements, so exactly three closing tags
    assert html.count("<script") == html.count("</script>") == 3
    index = html.split('id="swerl-index">', 1)[1].split("</script>", 1)[0]
    assert json.loads(index)["tasks"] == [f"T{evil}"]  # escaped in the page, intact once parsed


def test_tamper_column_and_filter_show_set_aside_and_reasons(tmp_path: Path):
    recs = [graded("T0", i) for i in range(4)]
    recs[0]["grade"].update(reason="results_untrusted", audit={"flagged": True, "findings": ["replaced: x"]})
    recs[1]["grade"].update(set_aside=["conftest.py"], audit={"flagged": True, "findings": []})
    recs[2]["grade"].update(audit={"flagged": True, "findings": [], "outside_writes": ["/home/u/x"]})
    path = tmp_path / "graded.jsonl"
    write_jsonl(path, recs)
    data = build_report([str(path)])
    assert [row[8] for row in data.index] == ["results_untrusted", "set_aside", "audit", ""]
    res = CliRunner().invoke(app, ["report", str(path), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r.html").read_text()
    assert 'id="f-tamper"' in html
    assert "<th>tamper</th>" in html
    body = json.loads(data.bodies[1])["grade"]
    assert (body["set_aside"], body["audit"]["flagged"]) == (["conftest.py"], True)
