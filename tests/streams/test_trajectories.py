"""The one trajectory builder (streams/trajectories.py): `collect` and `convert` write the same record shape."""

from __future__ import annotations

from pathlib import Path

import orjson

from swerl_cli.streams.trajectories import trajectory_id, trajectory_record
from tests.conftest import EXAMPLES, run_swerl

FIX = Path(__file__).resolve().parents[1] / "convert" / "fixtures"
SHAPE = ["id", "instance_id", "run", "sample", "task", "policy", "messages", "turns", "patch", "exit_status"]
SHAPE += ["error", "stats", "schema"]


def _fields(**over: object) -> dict:
    base: dict = {"policy": {}, "messages": [], "turns": [], "patch": "", "exit_status": "submitted"}
    return {**base, "error": None, "stats": {}, **over}


def test_trajectory_record_fields_and_order() -> None:
    rec = trajectory_record(instance_id="a__b-1", run=1, sample=2, task={"instance_id": "a__b-1"}, **_fields())
    assert list(rec) == SHAPE
    assert (rec["id"], rec["schema"]) == ("a__b-1/1/2", "swerl.trajectory/1")
    assert trajectory_id("a__b-1", "1", 2) == rec["id"]
    bare = trajectory_record(
        instance_id="x", run="r", sample=0, exit_status_raw=None, source={"format": "f"}, **_fields()
    )
    assert list(bare) == [k for k in SHAPE if k != "task"][:9] + [
        "exit_status_raw",
        "error",
        "stats",
        "source",
        "schema",
    ]


def test_collect_and_convert_write_the_same_shape(tmp_path: Path, example_clones: Path) -> None:
    collected = run_swerl(
        "collect", str(EXAMPLES / "toy-tasks.jsonl"), "--policy", "gold", "--sandbox", "local",
        "--repo-dir", str(example_clones),
    )  # fmt: skip
    assert collected.returncode == 0, collected.stderr
    converted = run_swerl(
        "convert", str(FIX / "swerl-examples__bizdays-1.traj"), "--tasks", str(EXAMPLES / "tasks.jsonl")
    )
    assert converted.returncode == 0, converted.stderr
    [col] = [orjson.loads(line) for line in collected.stdout.splitlines()]
    [conv] = [orjson.loads(line) for line in converted.stdout.splitlines()]
    assert [k for k in col if k != "node"] == SHAPE  # `node`: the executor's, added after the record is built
    assert [k for k in conv if k not in ("exit_status_raw", "source")] == SHAPE
    assert conv["id"] == trajectory_id(conv["instance_id"], conv["run"], conv["sample"])
    assert col["id"] == trajectory_id(col["instance_id"], col["run"], col["sample"])
