"""Planning a collect run without an engine: sharding, samples, resume skips, bad task lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swerl_cli.collect import CollectConfig, plan_jobs
from swerl_cli.core.errors import ConfigError, InputError
from swerl_cli.streams.jsonl import read_records
from tests.conftest import EXAMPLES, run_swerl

TASKS = EXAMPLES / "tasks.jsonl"


def three_tasks(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(TASKS.read_text().splitlines(keepends=True)[:3]))
    return path


def plan(path: Path, skip: set[str] | None = None, **cfg: object) -> list[tuple[str, int]]:
    jobs = plan_jobs(read_records(str(path)), CollectConfig(**cfg), skip or set())
    return [(task.instance_id, sample) for _, task, sample in jobs]


def test_samples_are_planned_task_major(tmp_path):
    path = three_tasks(tmp_path)
    ids = [json.loads(line)["instance_id"] for line in path.read_text().splitlines()]
    assert plan(path, samples=2) == [(i, s) for i in ids for s in (0, 1)]


def test_shards_split_the_tasks_without_overlap(tmp_path):
    path = three_tasks(tmp_path)
    ids = [json.loads(line)["instance_id"] for line in path.read_text().splitlines()]
    shard0, shard1 = plan(path, samples=2, shard="0/2"), plan(path, samples=2, shard="1/2")
    assert shard0 == [(ids[t], s) for t in (0, 2) for s in (0, 1)]
    assert shard1 == [(ids[1], s) for s in (0, 1)]


def test_resume_skips_the_episode_ids_already_written(tmp_path):
    path = three_tasks(tmp_path)
    first = json.loads(path.read_text().splitlines()[0])["instance_id"]
    planned = plan(path, {f"{first}/r1/0"}, samples=2, run="r1")
    assert (first, 0) not in planned
    assert (first, 1) in planned
    assert len(planned) == 5


@pytest.mark.parametrize("shard", ["2/2", "1", "a/b", "-1/2"])
def test_bad_shard_is_a_config_error(shard):
    with pytest.raises(ConfigError, match="field 'shard'"):
        CollectConfig(shard=shard)


def test_a_bad_task_line_fails_the_plan_before_any_episode(tmp_path):
    lines = TASKS.read_text().splitlines()[:2]
    bad = json.loads(lines[1])
    del bad["instance_id"]
    path = tmp_path / "tasks.jsonl"
    path.write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=r"tasks.jsonl:2: field 'instance_id'"):
        plan(path)


def test_bad_task_line_is_one_line_error_and_leaves_the_output_alone(tmp_path):
    lines = TASKS.read_text().splitlines()[:3]
    bad = json.loads(lines[1])
    del bad["instance_id"]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join([lines[0], json.dumps(bad), lines[2]]) + "\n")
    out = tmp_path / "earlier.jsonl"
    out.write_bytes(b'{"id": "kept/run0/0"}\n')
    res = run_swerl("collect", str(tasks), "--policy", "gold", "-o", str(out))
    assert res.returncode == 3
    err = res.stderr.decode().strip()
    assert err.count("\n") == 0
    assert "Traceback" not in err
    assert f"{tasks}:2" in err
    assert "instance_id" in err
    assert out.read_bytes() == b'{"id": "kept/run0/0"}\n'
