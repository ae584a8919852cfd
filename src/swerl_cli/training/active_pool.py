"""The active task pool: each RL iteration samples only the tasks that are neither always solved nor never solved
so far (the paper's stage-2 pool rule, §4.3, applied before every iteration instead of once).

    history = solve_history(read_many(graded_files))   # instance_id -> [resolved, ...] over every past rollout
    kept, counts = active_tasks(read_records(tasks), history)

A task with no graded rollout yet stays in (nothing is known about it); infrastructure errors (grade.status error,
collect exit_status error) are not evidence and are left out of the history. Its groups of G rollouts are what
dynamic sampling would otherwise drop: an always-solved or never-solved group has zero advantage.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from swerl_cli.streams.graded import read_graded
from swerl_cli.streams.records import Located


def solve_history(records: Iterable[Located]) -> dict[str, list[bool]]:
    """Each task's verdicts over all graded rollouts read (every iteration, every run), infra errors excluded."""
    history: dict[str, list[bool]] = {}
    for loc in records:
        g = read_graded(loc)
        if not (g.is_error or g.is_collect_error):
            history.setdefault(g.instance_id, []).append(g.resolved)
    return history


def is_active(verdicts: list[bool]) -> bool:
    """Neither always solved nor never solved so far (unseen tasks count as active)."""
    return not verdicts or (any(verdicts) and not all(verdicts))


def active_tasks(tasks: Iterable[Located], history: dict[str, list[bool]]) -> tuple[list[Located], dict[str, Any]]:
    """The task records whose history is active, in input order, and the counts behind the choice."""
    kept: list[Located] = []
    counts = {"tasks": 0, "kept": 0, "unseen": 0, "always_solved": 0, "never_solved": 0}
    for loc in tasks:
        iid = loc.obj.get("instance_id") if isinstance(loc.obj, dict) else None
        if not isinstance(iid, str) or not iid:
            raise loc.error("instance_id", "a task record needs a non-empty string instance_id")
        counts["tasks"] += 1
        verdicts = history.get(iid, [])
        if is_active(verdicts):
            kept.append(loc)
            counts["kept"] += 1
            counts["unseen"] += not verdicts
        else:
            counts["always_solved" if all(verdicts) else "never_solved"] += 1
    return kept, counts
