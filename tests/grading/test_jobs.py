"""Turning input rows into grading jobs, without an engine: prediction rows, trajectories, located errors."""

from __future__ import annotations

import orjson
import pytest

from swerl_cli.core.errors import InputError
from swerl_cli.grading.jobs import load_tasks, to_job
from swerl_cli.streams.records import Located
from tests.conftest import EXAMPLES, run_swerl

TASK = orjson.loads((EXAMPLES / "tasks.jsonl").read_bytes().splitlines()[0])
IID = TASK["instance_id"]
TASKS = load_tasks([Located("tasks.jsonl", 1, TASK)])


def test_prediction_row_becomes_a_job_named_by_instance_and_model():
    row = {"instance_id": IID, "model_name_or_path": "m1", "model_patch": "diff", "kept": 1}
    job = to_job(Located("p.jsonl", 1, row), TASKS)
    assert (job.id, job.patch, job.task.instance_id) == (f"{IID}/m1", "diff", IID)
    assert job.obj is row


def test_trajectory_without_patch_or_id_gets_an_empty_patch_and_a_derived_id():
    job = to_job(Located("t.jsonl", 1, {"task": TASK, "run": "r", "sample": 3}), None)
    assert (job.id, job.patch) == (f"{IID}/r/3", "")


def test_duplicate_task_is_a_located_error():
    with pytest.raises(InputError, match=r"tasks.jsonl:2: field 'instance_id': duplicate task"):
        load_tasks([Located("tasks.jsonl", 1, TASK), Located("tasks.jsonl", 2, TASK)])


@pytest.mark.parametrize(
    ("row", "tasks", "needle"),
    [
        ({"instance_id": IID, "model_name_or_path": "m", "model_patch": 5}, TASKS, "field 'model_patch'"),
        ({"instance_id": "nope__x-1", "model_name_or_path": "m", "model_patch": ""}, TASKS, "no task 'nope__x-1'"),
        ({"model_name_or_path": "m", "model_patch": ""}, TASKS, "field 'instance_id': missing"),
        ({"instance_id": IID, "model_patch": ""}, TASKS, "field 'model_name_or_path': missing"),
        ({"instance_id": IID, "model_name_or_path": "m", "model_patch": ""}, None, "needs --tasks FILE"),
        ({"task": TASK, "patch": 7}, None, "field 'patch': expected string or null"),
        ({"instance_id": IID}, TASKS, "expected a trajectory"),
    ],
)
def test_bad_row_is_a_located_error(row, tasks, needle):
    with pytest.raises(InputError, match=r"p.jsonl:4: ") as e:
        to_job(Located("p.jsonl", 4, row), tasks)
    assert needle in str(e.value)


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ({"instance_id": IID, "model_name_or_path": "m", "model_patch": 5}, "field 'model_patch'"),
        ({"instance_id": "nope__x-1", "model_name_or_path": "m", "model_patch": ""}, "field 'instance_id': no task"),
        ({"model_name_or_path": "m", "model_patch": ""}, "field 'instance_id': missing"),
    ],
)
def test_bad_prediction_row_is_one_line_error(tmp_path, row: dict, needle: str) -> None:
    (tmp_path / "tasks.jsonl").write_bytes(orjson.dumps(TASK) + b"\n")
    (tmp_path / "p.jsonl").write_bytes(orjson.dumps(row) + b"\n")
    res = run_swerl("grade", str(tmp_path / "p.jsonl"), "--tasks", str(tmp_path / "tasks.jsonl"))
    err = res.stderr.decode().strip().splitlines()
    assert res.returncode == 3
    assert len(err) == 1, err
    assert f"p.jsonl:1: {needle}" in err[0]
    assert "Traceback" not in res.stderr.decode()
