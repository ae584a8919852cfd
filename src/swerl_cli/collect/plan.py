"""The planner: task records x samples -> the episode jobs of this shard, minus the ids already done."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from swerl_cli.collect.config import CollectConfig
from swerl_cli.streams.records import TASK, Located, Task, UniqueIds, check_schema
from swerl_cli.streams.trajectories import trajectory_id


class Job(NamedTuple):
    """One episode to run: the task record as read (with its location, for error messages), parsed, and a sample."""

    loc: Located
    task: Task
    sample: int


def plan_jobs(tasks: Iterable[Located], cfg: CollectConfig, skip_ids: set[str]) -> list[Job]:
    """Validate tasks, keep this shard's, expand samples (task-major, so groups finish together), drop done ids."""
    shard = cfg.shard_index()
    jobs = []
    ids = UniqueIds()  # a task listed twice would write each of its episode ids twice
    for n, loc in enumerate(tasks):
        check_schema(loc, TASK)
        task = Task.from_json(loc)
        ids.check(loc, task.instance_id, "instance_id")
        if shard is not None and n % shard[1] != shard[0]:
            continue
        for s in range(cfg.samples):
            if trajectory_id(task.instance_id, cfg.run, s) not in skip_ids:
                jobs.append(Job(loc, task, s))
    return jobs
