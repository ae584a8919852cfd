"""Run summaries read back by `swerl convert` (issue 43): swerl's own `grade --report` lists record ids
(`iid/run/0`, `iid/model` for prediction rows), which were taken for instance ids; and the harness's folder name
turns every `__` into `/`, so `--model-name` is how a name holding `__` is given (it wins)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import run_swerl

INTEROP = Path(__file__).parent / "interop"


def _records(res) -> list[dict]:
    assert res.returncode == 0, res.stderr.decode()
    return [json.loads(line) for line in res.stdout.splitlines()]


def _graded(rid: str, iid: str, status: str, **extra: object) -> dict:
    rec = {"id": rid, "instance_id": iid, **extra, "patch": "diff --git a/x b/x\n"}
    return {**rec, "grade": {"status": status, "resolved": status == "resolved"}, "schema": "swerl.graded/1"}


def test_swerl_summary_ids_map_back_to_instances_keeping_run_and_sample(tmp_path: Path) -> None:
    graded = [
        _graded("django__django-11099/iter-2/0", "django__django-11099", "resolved", run="iter-2", sample=0),
        _graded("django__django-11099/iter-2/3", "django__django-11099", "unresolved", run="iter-2", sample=3),
        _graded("astropy__astropy-12907/iter-2/1", "astropy__astropy-12907", "resolved", run="iter-2", sample=1),
        _graded("sympy__sympy-20590/org/model-1", "sympy__sympy-20590", "resolved", model_name_or_path="org/model-1"),
    ]
    out = tmp_path / "graded.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in graded))
    (tmp_path / "none.jsonl").write_text("")
    summary = tmp_path / "summary.json"
    res = run_swerl("grade", str(tmp_path / "none.jsonl"), "-o", str(out), "--resume", "--report", str(summary))
    assert res.returncode == 0, res.stderr.decode()
    assert "django__django-11099/iter-2/3" in json.loads(summary.read_text())["unresolved_ids"]

    recs = {r["id"]: r for r in _records(run_swerl("convert", str(summary)))}
    row_id = "sympy__sympy-20590/summary/0"  # a prediction row's id names its model, not a run: the summary's name
    ids = [g["id"] for g in graded[:3]] + [row_id]
    assert sorted(recs) == sorted(ids)  # before: ids like 'django__django-11099/iter-2/0/summary/0'
    for g, rid in zip(graded, ids, strict=True):
        rec = recs[rid]
        assert rec["instance_id"] == g["instance_id"]  # before: the whole record id
        assert rec["grade"]["status"] == g["grade"]["status"]
    assert (recs["django__django-11099/iter-2/3"]["run"], recs["django__django-11099/iter-2/3"]["sample"]) == (
        "iter-2",
        3,
    )
    assert recs[row_id]["policy"]["model"] == "org/model-1"
    # and on to the harness: one prediction per instance is still the rule, named by the instance
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"resolved_ids": ["astropy__astropy-12907/iter-2/1"], "unresolved_ids": []}))
    res = run_swerl("convert", str(one), "--model-name", "m")
    (rec,) = _records(res)
    assert (rec["instance_id"], rec["run"], rec["sample"]) == ("astropy__astropy-12907", "iter-2", 1)


def test_a_summary_id_that_is_no_id_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "s.json"
    bad.write_text(json.dumps({"resolved_ids": ["a__b-1", "/iter-0/0"], "unresolved_ids": []}))
    res = run_swerl("convert", str(bad))
    assert res.returncode == 4
    lines = res.stderr.decode().splitlines()
    assert lines[0] == (
        f"swerl convert: {bad}: field 'resolved_ids': '/iter-0/0' is neither an instance id nor a swerl record id "
        "(INSTANCE/RUN/SAMPLE, INSTANCE/MODEL)"
    )
    assert len(lines) == 2  # the line, then the count


def test_model_name_wins_over_a_harness_folder_name_that_holds_double_underscores(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(INTEROP / "logs", logs)
    run_dir = logs / "run_evaluation" / "run-7"
    (run_dir / "org__model-1").rename(run_dir / "org__my__run")  # the harness's name for model "org/my__run"
    mangled = {r["policy"]["model"] for r in _records(run_swerl("convert", str(logs)))}
    assert mangled == {"org/my/run"}  # the documented limit of the folder rule
    named = _records(run_swerl("convert", str(logs), "--model-name", "org/my__run"))
    assert {r["policy"]["model"] for r in named} == {"org/my__run"}
    preds = _records(run_swerl("convert", str(logs), "--model-name", "org/my__run", "--to", "swebench-preds"))
    assert {p["model_name_or_path"] for p in preds} == {"org/my__run"}
    help_text = run_swerl("convert", "--help", env={"COLUMNS": "200"}).stdout.decode()
    assert "with __ read as /" in help_text
