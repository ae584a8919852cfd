"""Issue 43 (hangs): `grade` on a task whose `test_cmd` holds a NUL byte never ended (the sandbox shell waited on a
command line that cannot carry it) and ignored `--timeout-s`. The row is now refused before any sandbox: its
record's grade names the field, and the run ends with exit 4 (some rows refused)."""

from __future__ import annotations

import orjson
import pytest

from tests.conftest import EXAMPLES, run_swerl
from tests.records import jsonl

TASK = orjson.loads((EXAMPLES / "tasks.jsonl").read_bytes().splitlines()[0])


@pytest.mark.docker
def test_grade_refuses_a_test_cmd_with_a_nul_byte_at_once(tmp_path) -> None:
    traj = {"id": "t/0", "task": {**TASK, "test_cmd": "pytest\0 -x"}, "patch": TASK["patch"]}
    (tmp_path / "in.jsonl").write_bytes(jsonl([traj]))
    res = run_swerl("grade", str(tmp_path / "in.jsonl"), "--timeout-s", "30", timeout=90)
    assert res.returncode == 4, res.stderr.decode()
    (rec,) = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert rec["grade"]["status"] == "error"
    assert "test_cmd" in rec["grade"]["error"]
    assert "NUL" in rec["grade"]["error"]
