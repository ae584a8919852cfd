"""Interop with the SWE-bench harness both ways (docs/interop.md), on fixtures written in the real formats:
SWE-agent's `preds.json` (indent 4), `all_preds.jsonl`, a 1.x `.traj` whose id is in `replay_config`, the harness's
run summary `{model}.{run_id}.json` and `logs/run_evaluation/{run_id}/{model}/{iid}/report.json` + `patch.diff`.

Before: preds.json / all_preds.jsonl were "unknown format" with exit 0 and nothing written, a 1.x `.traj` took
its id from the file name, no command read the harness's results, and eval had no --compare."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_swerl

FIX = Path(__file__).parent / "interop"
SUMMARY = FIX / "org__model-1.run-7.json"
LOGS = FIX / "logs" / "run_evaluation" / "run-7" / "org__model-1"
IDS = ["swerl-examples__bizdays-1", "swerl-examples__depsolve-1", "swerl-examples__envcfg-1", "swerl-examples__memo-1"]


def _records(res) -> list[dict]:
    assert res.returncode == 0, res.stderr.decode()
    return [json.loads(line) for line in res.stdout.splitlines()]


@pytest.mark.parametrize("name", ["preds.json", "all_preds.jsonl"])
def test_predictions_files_become_trajectories(name: str) -> None:
    recs = _records(run_swerl("convert", str(FIX / name)))
    assert sorted(r["instance_id"] for r in recs) == IDS
    by_id = {r["instance_id"]: r for r in recs}
    preds = json.loads((FIX / "preds.json").read_text())
    for iid, r in by_id.items():
        assert r["patch"] == preds[iid]["model_patch"]
        assert r["policy"]["model"] == "org/model-1"
        assert (r["id"], r["exit_status"], r["messages"]) == (f"{iid}/preds/0", "submitted", [])
        assert r["source"]["format"] == "preds"


def test_json_lines_saved_as_json_are_read_line_by_line(tmp_path: Path) -> None:
    src = tmp_path / "all_preds.json"
    src.write_bytes((FIX / "all_preds.jsonl").read_bytes())
    recs = _records(run_swerl("convert", str(src)))
    assert [(r["instance_id"], r["source"]["line"]) for r in recs] == [(iid, n) for n, iid in enumerate(IDS, 1)]


def test_a_pred_file_and_a_key_that_contradicts_its_instance_id(tmp_path: Path) -> None:
    one = tmp_path / "a__b-1.pred"
    one.write_text(json.dumps({"model_name_or_path": "m", "instance_id": "a__b-1", "model_patch": None}))
    bad = tmp_path / "preds.json"
    bad.write_text(json.dumps({"a__b-2": {"instance_id": "a__b-3", "model_patch": "x"}}, indent=4))
    res = run_swerl("convert", str(one), str(bad))
    assert res.returncode == 4
    (rec,) = [json.loads(line) for line in res.stdout.splitlines()]
    assert (rec["instance_id"], rec["patch"]) == ("a__b-1", "")
    err = res.stderr.decode().splitlines()
    assert err[0] == f"swerl convert: {bad}: field 'a__b-2.instance_id': \"a__b-3\" differs from its key"


def test_swe_agent_1x_traj_takes_its_id_from_replay_config(tmp_path: Path) -> None:
    traj = json.loads((Path(__file__).parent / "fixtures" / "swerl-examples__bizdays-1.traj").read_text())
    cfg = {"agent": {"model": {"name": "org/m"}}, "problem_statement": {"type": "swe_bench", "id": "acme__w-7"}}
    traj["replay_config"] = json.dumps(cfg)  # SWE-agent writes model_dump_json(): a JSON string
    src = tmp_path / "renamed-by-hand.traj"
    src.write_text(json.dumps(traj, indent=2))
    (rec,) = _records(run_swerl("convert", str(src)))
    assert (rec["instance_id"], rec["id"], rec["policy"]["model"]) == ("acme__w-7", "acme__w-7/swe-agent/0", "org/m")


def test_a_swe_agent_run_directory_skips_its_predictions_files(tmp_path: Path) -> None:
    """SWE-agent writes {iid}/{iid}.traj, {iid}/{iid}.pred and preds.json: the patch once per instance, not three."""
    iid = "swerl-examples__bizdays-1"
    (tmp_path / iid).mkdir()
    traj = (Path(__file__).parent / "fixtures" / f"{iid}.traj").read_text()
    (tmp_path / iid / f"{iid}.traj").write_text(traj)
    pred = {"model_name_or_path": "run", "instance_id": iid, "model_patch": "x"}
    (tmp_path / iid / f"{iid}.pred").write_text(json.dumps(pred))
    (tmp_path / "preds.json").write_text(json.dumps({iid: pred}, indent=4))
    (rec,) = _records(run_swerl("convert", str(tmp_path)))
    assert (rec["id"], rec["source"]["format"]) == (f"{iid}/swe-agent/0", "swe-agent")


def test_harness_summary_and_reports_become_graded_records(tmp_path: Path) -> None:
    recs = _records(run_swerl("convert", str(SUMMARY), str(FIX / "logs")))
    by_id = {r["instance_id"]: r for r in recs}
    assert sorted(by_id) == IDS  # incomplete_ids (no prediction) give no record
    status = {iid: (r["grade"]["status"], r["grade"]["resolved"], r["grade"]["reward"]) for iid, r in by_id.items()}
    assert status == {
        "swerl-examples__bizdays-1": ("resolved", True, 1.0),
        "swerl-examples__depsolve-1": ("unresolved", False, 0.0),
        "swerl-examples__envcfg-1": ("patch_failed", False, 0.0),  # error_ids + run_instance.log: apply failed
        "swerl-examples__memo-1": ("unresolved", False, 0.0),
    }
    memo = by_id["swerl-examples__memo-1"]
    report = json.loads((LOGS / "swerl-examples__memo-1" / "report.json").read_text())["swerl-examples__memo-1"]
    assert memo["grade"]["tests"]["FAIL_TO_PASS"] == report["tests_status"]["FAIL_TO_PASS"]
    assert memo["patch"] == (LOGS / "swerl-examples__memo-1" / "patch.diff").read_text()
    assert memo["grade"]["harness"]["summary"] == "unresolved_ids"  # merged: summary verdict + report detail
    assert (memo["run"], memo["policy"]["model"], memo["schema"]) == ("run-7", "org/model-1", "swerl.graded/1")
    assert by_id["swerl-examples__depsolve-1"]["grade"]["patch_applied"] is False  # empty patch: never run
    assert memo["source"]["harness_run"]["dataset"] == "examples/tasks.jsonl"  # v5 run.json, read with the logs
    # eval and report read them as a run
    res = run_swerl("eval", "--json", input=b"".join(json.dumps(r).encode() + b"\n" for r in recs))
    rep = json.loads(res.stdout.splitlines()[0])
    assert (rep["samples"], rep["errors"], rep["pass@1"]["mean"]) == (4, 0, 1 / 4)
    # the summary alone cannot say why an instance is in error_ids: an infra error, excluded from pass@1
    (alone,) = [r for r in _records(run_swerl("convert", str(SUMMARY))) if r["instance_id"].endswith("envcfg-1")]
    assert (alone["grade"]["status"], alone["grade"]["reward"], alone["run"]) == ("error", None, "org__model-1.run-7")
    graded = tmp_path / "harness.jsonl"
    graded.write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = run_swerl("report", str(graded), "-o", str(tmp_path / "h.html"))
    assert res.returncode == 0, res.stderr.decode()
    assert all(iid in (tmp_path / "h.html").read_text() for iid in IDS)


def test_harness_errors_are_read_from_their_logs_when_the_directory_is_given(tmp_path: Path) -> None:
    """No report.json at all: the summary says error; test_output.txt says the tests timed out (swerl's `timeout`),
    run_instance.log says the patch did not apply (`patch_failed`); a log without either stays an infra error."""
    logs = tmp_path / "logs" / "run_evaluation" / "r1" / "org__m"
    for iid in ("a__b-1", "a__b-2", "a__b-3"):
        (logs / iid).mkdir(parents=True)
        (logs / iid / "run_instance.log").write_text("2026-11-20 10:00:00,000 - INFO - Container for x created\n")
    (logs / "a__b-1" / "test_output.txt").write_text(
        "+ pytest -rA\ncollected 3 items\n\nTimeout error: 1800 seconds exceeded."
    )
    shutil.copy(LOGS / "swerl-examples__envcfg-1" / "run_instance.log", logs / "a__b-2" / "run_instance.log")
    summary = {"submitted_ids": ["a__b-1", "a__b-2", "a__b-3"], "resolved_ids": [], "unresolved_ids": []}
    src = tmp_path / "org__m.r1.json"
    src.write_text(json.dumps({**summary, "error_ids": ["a__b-1", "a__b-2", "a__b-3"], "schema_version": 2}))
    recs = _records(run_swerl("convert", str(src), str(tmp_path / "logs")))
    got = {r["instance_id"]: (r["grade"]["status"], r["grade"]["reward"]) for r in recs}
    assert got == {"a__b-1": ("timeout", 0.0), "a__b-2": ("patch_failed", 0.0), "a__b-3": ("error", None)}


def test_harness_verdicts_that_contradict_each_other_are_an_error_line(tmp_path: Path) -> None:
    summary = json.loads(SUMMARY.read_text())
    summary["resolved_ids"], summary["unresolved_ids"] = ["swerl-examples__memo-1"], ["swerl-examples__bizdays-1"]
    src = tmp_path / "org__model-1.run-7.json"
    src.write_text(json.dumps(summary, indent=4))
    res = run_swerl("convert", str(src), str(LOGS))
    assert res.returncode == 4
    err = res.stderr.decode()
    assert "field 'swerl-examples__bizdays-1': harness verdict 'resolved' differs from 'unresolved' in" in err


def _graded_file(tmp_path: Path, name: str, verdicts: dict[str, str]) -> Path:
    path = tmp_path / name
    rows = [
        {"id": f"{iid}/s/0", "instance_id": iid, "grade": {"status": st, "resolved": st == "resolved"}}
        for iid, st in verdicts.items()
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_eval_compare_lists_agreements_and_disagreements(tmp_path: Path) -> None:
    harness = tmp_path / "harness.jsonl"
    harness.write_bytes(run_swerl("convert", str(SUMMARY), str(FIX / "logs")).stdout)
    mine = _graded_file(
        tmp_path,
        "swerl.jsonl",
        {
            "swerl-examples__bizdays-1": "unresolved",  # a disagreement
            "swerl-examples__depsolve-1": "unresolved",
            "swerl-examples__envcfg-1": "error",  # an infra error on swerl's side: nothing to compare
            "swerl-examples__wordwrap-1": "resolved",  # only in swerl's file
        },
    )
    res = run_swerl("eval", str(harness), str(mine), "--compare", "--json")
    assert res.returncode == 0, res.stderr.decode()
    cmp = json.loads(res.stdout.splitlines()[-1])
    assert cmp["schema"] == "swerl.compare/1"
    assert cmp["counts"] == {
        "agree": 1,
        "disagree": 1,
        "error": 1,
        "only_a": 1,
        "only_b": 1,
        "both_resolved": 0,
        "both_unresolved": 1,
    }
    assert cmp["agreement_rate"] == 0.5
    verdict = {row["instance_id"]: row["verdict"] for row in cmp["instances"]}
    assert verdict["swerl-examples__bizdays-1"] == "disagree"
    assert verdict["swerl-examples__memo-1"] == "only_a"
    err = res.stderr.decode()
    rows = err[err.index("compare: A = harness.jsonl, B = swerl.jsonl") :].splitlines()[1:6]
    assert [r.split()[0] for r in rows] == ["disagree", "error", "only", "only", "agree"]  # disagreements first
    assert rows[0].split() == ["disagree", "swerl-examples__bizdays-1", "A", "resolved", "B", "unresolved"]
    assert "compare: 1 agree (0 both resolved, 1 both unresolved), 1 disagree, 1 with an error" in err


def test_eval_compare_needs_two_inputs_with_one_record_per_instance(tmp_path: Path) -> None:
    a = _graded_file(tmp_path, "a.jsonl", {"x": "resolved"})
    res = run_swerl("eval", str(a), "--compare")
    assert res.returncode == 2
    assert "--compare needs exactly two inputs (A B); got 1" in res.stderr.decode()
    two = tmp_path / "two.jsonl"
    two.write_text(a.read_text() + a.read_text().replace("x/s/0", "x/s/1"))
    res = run_swerl("eval", str(a), str(two), "--compare")
    assert res.returncode == 3
    assert f"{two}:2: field 'instance_id': 'x' again, first at {two}:1; --compare takes one record" in (
        res.stderr.decode()
    )


@pytest.mark.docker
def test_harness_run_compares_with_swerl_grading_of_the_same_predictions(tmp_path: Path) -> None:
    """The loop a user runs: preds.json -> convert -> grade (real containers); harness files -> convert; compare."""
    traj = run_swerl("convert", str(FIX / "preds.json"))
    assert traj.returncode == 0, traj.stderr.decode()
    # harness mode: the SWE-bench harness's apply fallbacks and its patch_failed status (strict, the default, says
    # unresolved with reason patch_failed)
    graded = run_swerl(
        "grade", "--tasks", str(EXAMPLES / "tasks.jsonl"), "--workers", "2", "--mode", "harness", input=traj.stdout
    )
    assert graded.returncode == 0, graded.stderr.decode()[-2000:]
    mine = tmp_path / "swerl.jsonl"
    mine.write_bytes(graded.stdout)
    harness = tmp_path / "harness.jsonl"
    res = run_swerl("convert", str(SUMMARY), str(FIX / "logs"), "-o", str(harness))
    assert res.returncode == 0, res.stderr.decode()
    res = run_swerl("eval", str(harness), str(mine), "--compare", "--json")
    assert res.returncode == 0, res.stderr.decode()
    cmp = json.loads(res.stdout.splitlines()[-1])
    assert cmp["counts"]["agree"] == 4
    assert cmp["counts"]["disagree"] == 0
    assert (cmp["counts"]["both_resolved"], cmp["counts"]["both_unresolved"]) == (1, 3)
    # another repository's diff: the harness logged "Patch Apply Failed", swerl could not apply it either
    (row,) = [r for r in cmp["instances"] if r["instance_id"] == "swerl-examples__envcfg-1"]
    assert (row["a"]["status"], row["b"]["status"]) == ("patch_failed", "patch_failed")
