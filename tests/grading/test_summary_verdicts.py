"""`swerl grade --report` counts a graded record by its verdict when the record carries no patch text (issue 43):
records that went through `filter --drop patch` or came from the harness's summary were all counted as empty
patches (0 resolved of 500 where `swerl eval` said 500). No sandbox: every record is already in the `-o` file and
`--resume` grades nothing new."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.conftest import run_swerl


def _graded(i: int, status: str, **extra: object) -> dict:
    grade = {"status": status, "resolved": status == "resolved", "reward": float(status == "resolved")}
    grade.update(extra.pop("grade", {}))  # type: ignore[arg-type]
    return {
        "id": f"a__b-{i}/run/0",
        "instance_id": f"a__b-{i}",
        "run": "run",
        "sample": 0,
        **extra,
        "grade": grade,
        "schema": "swerl.graded/1",
    }


def _report(tmp_path: Path, records: list[dict]) -> dict:
    prev = tmp_path / "graded.jsonl"
    prev.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    (tmp_path / "none.jsonl").write_bytes(b"")
    res = run_swerl(
        "grade", str(tmp_path / "none.jsonl"), "-o", str(prev), "--resume", "--report", str(tmp_path / "r.json")
    )
    assert res.returncode == 0, res.stderr.decode()
    return orjson.loads((tmp_path / "r.json").read_bytes())


def test_records_without_patch_text_count_by_their_verdict(tmp_path: Path) -> None:
    records = [_graded(i, "resolved") for i in range(5)] + [_graded(5, "unresolved"), _graded(6, "patch_failed")]
    rep = _report(tmp_path, records)
    assert rep["resolved_instances"] == 5  # 0 before the fix: every one was an empty patch
    assert rep["unresolved_instances"] == 1
    assert rep["empty_patch_instances"] == 0
    assert rep["error_instances"] == 1
    assert rep["patch_failed_ids"] == ["a__b-6/run/0"]
    assert rep["completed_instances"] == 6


def test_blank_patch_text_is_still_an_empty_patch_unless_the_grade_applied_one(tmp_path: Path) -> None:
    records = [
        _graded(0, "unresolved", patch="", grade={"patch_applied": False}),  # swerl graded an empty patch
        _graded(1, "unresolved", model_patch=None),  # a prediction row without a patch
        _graded(2, "unresolved", patch="  \n"),
        _graded(3, "resolved", patch="", grade={"patch_applied": True}),  # harness summary: applied, text not kept
        _graded(4, "resolved", patch="diff --git a/x b/x\n"),
    ]
    rep = _report(tmp_path, records)
    assert rep["empty_patch_ids"] == ["a__b-0/run/0", "a__b-1/run/0", "a__b-2/run/0"]
    assert rep["resolved_ids"] == ["a__b-3/run/0", "a__b-4/run/0"]
