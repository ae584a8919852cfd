"""The trajectory record, built in one place: `collect` (an episode) and `convert` (another agent's run) both call
`trajectory_record`, so the two write the same fields in the same order (docs/records.md, "trajectory").

    rec = trajectory_record(instance_id="a__b-1", run="iter-0", sample=2, task=task, policy={...}, messages=[...],
                            turns=[...], patch="diff ...", exit_status="submitted", error=None, stats={...})
    rec["id"] == "a__b-1/iter-0/2"
"""

from __future__ import annotations

from typing import Any

from swerl_cli.streams.records import TRAJECTORY, schema_tag

_ABSENT: Any = object()


def trajectory_id(instance_id: str, run: str | int, sample: int) -> str:
    """`{instance_id}/{run}/{sample}`, the record id: `trajectory_id("a", 1, 0) == "a/1/0"`."""
    return f"{instance_id}/{run}/{sample}"


def trajectory_record(
    *,
    instance_id: str,
    run: str | int,
    sample: int,
    task: dict[str, Any] | None = None,
    policy: dict[str, Any],
    messages: list[dict[str, Any]],
    turns: list[dict[str, Any]],
    patch: str,
    exit_status: str,
    exit_status_raw: Any = _ABSENT,
    error: str | None,
    stats: dict[str, Any],
    source: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One `swerl.trajectory` record. `task` (embedded so `grade` needs no side file) is left out when None;
    `exit_status_raw` (the source agent's own exit status) and `source` (where a converted run came from) are written
    by `convert` only."""
    rec: dict[str, Any] = {
        "id": trajectory_id(instance_id, run, sample),
        "instance_id": instance_id,
        "run": run,
        "sample": sample,
    }
    if task is not None:
        rec["task"] = task
    rec.update(policy=policy, messages=messages, turns=turns, patch=patch, exit_status=exit_status)
    if exit_status_raw is not _ABSENT:
        rec["exit_status_raw"] = exit_status_raw
    rec.update(error=error, stats=stats)
    if source is not None:
        rec["source"] = source
    rec["schema"] = schema_tag(TRAJECTORY)
    return rec
