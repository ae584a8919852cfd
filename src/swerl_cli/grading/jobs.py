"""Grade a stream of records in parallel sandboxes: trajectories (task embedded) or SWE-bench prediction rows.

Records are yielded as they finish, so the output order may differ from the input order (ids identify them).
Ctrl-C / SIGTERM: no new work starts, every live sandbox of this run is removed (also by label), and the
interrupt propagates; records already yielded are complete.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from swerl_cli.core.config_stop import ConfigErrorStop
from swerl_cli.core.errors import JobLostError
from swerl_cli.executor import open_executor, stream_jobs
from swerl_cli.grading.grade import GradeConfig, episode_error_grade, error_grade, grade_patch
from swerl_cli.sandbox import run_cleanup
from swerl_cli.streams.records import GRADED, TASK, TRAJECTORY, Located, Task, UniqueIds, check_schema, schema_tag
from swerl_cli.streams.task_fields import task_row_error


@dataclass(slots=True)
class Job:
    """One record to grade: its id, task, patch and the original object (passed through)."""

    id: str
    task: Task
    patch: str
    obj: dict[str, Any]


def load_tasks(records: Iterable[Located]) -> dict[str, Task]:
    """Index task records by instance_id (for grading prediction rows); duplicates are an error."""
    out: dict[str, Task] = {}
    for loc in records:
        check_schema(loc, TASK)
        task = Task.from_json(loc)
        if task.instance_id in out:
            raise loc.error("instance_id", f"duplicate task {task.instance_id!r}")
        out[task.instance_id] = task
    return out


def to_job(loc: Located, tasks: dict[str, Task] | None) -> Job:
    """Validate one input record (trajectory, graded or prediction row) into a Job; located errors otherwise.

    A task with neither FAIL_TO_PASS nor PASS_TO_PASS tests is refused: every patch would resolve it.
    """
    job = _to_job(loc, tasks)
    if not job.task.FAIL_TO_PASS and not job.task.PASS_TO_PASS:
        field = "task.FAIL_TO_PASS" if "task" in loc.obj else "FAIL_TO_PASS"
        raise loc.error(
            field,
            f"task {job.task.instance_id!r} has no FAIL_TO_PASS and no PASS_TO_PASS tests; "
            "every patch would resolve it",
        )
    return job


def _to_job(loc: Located, tasks: dict[str, Task] | None) -> Job:
    check_schema(loc, TRAJECTORY, GRADED)
    obj = loc.obj
    if "task" in obj:
        return _trajectory_job(loc, Task.from_json(loc, prefix="task"))
    if "model_patch" in obj or "model_name_or_path" in obj:
        iid = obj.get("instance_id")
        if not isinstance(iid, str):
            raise loc.error("instance_id", "missing" if iid is None else "expected string")
        model = obj.get("model_name_or_path")
        if not isinstance(model, str):
            raise loc.error("model_name_or_path", "missing" if model is None else "expected string")
        patch = obj.get("model_patch")
        if patch is not None and not isinstance(patch, str):
            raise loc.error("model_patch", "expected string or null")
        if tasks is None:
            raise loc.error(None, "a SWE-bench prediction row needs --tasks FILE with the task records")
        if iid not in tasks:
            raise loc.error("instance_id", f"no task {iid!r} in --tasks")
        return Job(f"{iid}/{model}", tasks[iid], patch or "", obj)
    if tasks is not None and "patch" in obj and isinstance(obj.get("instance_id"), str):
        # a trajectory without an embedded task (e.g. `swerl convert` of predictions) takes it from --tasks
        if obj["instance_id"] not in tasks:
            raise loc.error("instance_id", f"no task {obj['instance_id']!r} in --tasks")
        return _trajectory_job(loc, tasks[obj["instance_id"]])
    raise loc.error(None, "expected a trajectory (with 'task') or a prediction row (instance_id, model_patch)")


def _trajectory_job(loc: Located, task: Task) -> Job:
    obj = loc.obj
    patch = obj.get("patch")
    if patch is not None and not isinstance(patch, str):
        raise loc.error("patch", "expected string or null")
    rid = obj.get("id")
    if not isinstance(rid, str):
        rid = f"{task.instance_id}/{obj.get('run', 'run')}/{obj.get('sample', 0)}"
    return Job(rid, task, patch or "", obj)


def graded_record(job: Job, grade: dict[str, Any]) -> dict[str, Any]:
    """The output record: the input object untouched plus id, grade and the graded schema tag."""
    out = dict(job.obj)
    out["id"] = job.id
    out["grade"] = grade
    out["schema"] = schema_tag(GRADED)
    return out


def new_run_id() -> str:
    """A fresh run id for container labels: grade-<time>-<random>."""
    return f"grade-{time.strftime('%Y%m%d%H%M%S')}-{secrets.token_hex(3)}"


def grade_records(
    records: Iterable[Located],
    cfg: GradeConfig,
    *,
    tasks: dict[str, Task] | None = None,
    skip_ids: set[str] | None = None,
    on_skip: Callable[[str], None] | None = None,
    executor: Any = None,
) -> Iterator[dict[str, Any]]:
    """Yield graded records as they complete, `cfg.workers` at a time, on `executor` (default: threads here);
    input is read lazily (streams work).

    A record whose id is in `skip_ids` (already graded) is passed to `on_skip`; an id repeated in the input is an
    InputError naming both lines (records.UniqueIds), raised before that record is graded. A job
    lost with its worker or node (after the executor's retries) is an error grade, never a reward.
    """
    run_id = cfg.run_id or new_run_id()
    backend = cfg.sandbox_backend
    if cfg.run_id:
        backend.remove_stale(run_id)  # left by an earlier run with this --run-id that was killed
    done = skip_ids or set()
    ex = executor or open_executor(None, cfg.workers, name="swerl-grade")

    def jobs() -> Iterator[tuple[Job, Any, Any]]:
        ids = UniqueIds(done)
        for loc in records:
            job = to_job(loc, tasks)
            if not ids.check(loc, job.id):
                if on_skip is not None:
                    on_skip(job.id)
                continue
            bad = task_row_error(loc, job.task, "task.", images=backend.uses_images)  # the row's (or --tasks')
            if bad is not None:  # a value the engine or git would refuse: this record's error, never the run's end
                yield job, None, {**error_grade(str(bad)), "invalid_field": bad.field}
                continue
            if job.obj.get("exit_status") == "error":  # an infra failure upstream stays an error, not reward 0
                yield job, None, episode_error_grade(job.obj.get("error"))
                continue
            yield job, grade_patch, (job.task, job.patch, cfg, run_id)

    # the first jobs all failing on the configuration, or without a sandbox from an engine that does not answer: stop
    stop = ConfigErrorStop(grade_error, "grading jobs", unavailable=backend.unavailable)
    for job, outcome in stream_jobs(
        ex,
        jobs(),
        cleanup=run_cleanup(run_id, backend),
        stale_cleanup=run_cleanup(run_id, backend, stale_only=True),
    ):
        if isinstance(outcome, JobLostError):
            record = graded_record(job, error_grade(f"JobLostError: {outcome}"))
        elif outcome.node is None:  # decided without a sandbox
            record = graded_record(job, outcome.value)
        else:
            record = graded_record(job, {**outcome.value, "node": outcome.node})
        yield from stop.push(record)
    yield from stop.finish()


def grade_error(record: dict[str, Any]) -> str | None:
    """The error of a graded record whose grade is an error, None for any other."""
    grade = record.get("grade") or {}
    return str(grade["error"]) if grade.get("status") == "error" and grade.get("error") else None
