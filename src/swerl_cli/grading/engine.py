"""Grade a stream of records in parallel sandboxes: trajectories (task embedded) or SWE-bench prediction rows.

Records are yielded as they finish, so the output order may differ from the input order (ids identify them).
Ctrl-C / SIGTERM: no new work starts, every live sandbox of this run is removed (also by label), and the
interrupt propagates; records already yielded are complete.
"""

from __future__ import annotations

import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from swerl_cli.grading.grade import GradeConfig, episode_error_grade, grade_patch
from swerl_cli.records import GRADED, TASK, TRAJECTORY, Located, Task, check_schema, schema_tag


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
        task = Task.from_json(loc, prefix="task")
        patch = obj.get("patch")
        if patch is not None and not isinstance(patch, str):
            raise loc.error("patch", "expected string or null")
        rid = obj.get("id")
        if not isinstance(rid, str):
            rid = f"{task.instance_id}/{obj.get('run', 'run')}/{obj.get('sample', 0)}"
        return Job(rid, task, patch or "", obj)
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
    raise loc.error(None, "expected a trajectory (with 'task') or a prediction row (instance_id, model_patch)")


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
) -> Iterator[dict[str, Any]]:
    """Yield graded records as they complete, `cfg.workers` at a time; input is read lazily (streams work).

    A record whose id is in `skip_ids` (already graded) is passed to `on_skip`; a repeated id is graded once.
    """
    run_id = cfg.run_id or new_run_id()
    if cfg.run_id:
        from swerl_cli.sandbox import remove_stale

        remove_stale(run_id, cfg.backend)  # left by an earlier run with this --run-id that was killed
    done = skip_ids or set()
    skip: set[str] = set()
    pool = ThreadPoolExecutor(max_workers=cfg.workers, thread_name_prefix="swerl-grade")
    pending: dict[Future[dict[str, Any]], Job] = {}
    source = iter(records)
    exhausted = False
    clean_exit = False
    try:
        while True:
            while not exhausted and len(pending) < 2 * cfg.workers:
                loc = next(source, None)
                if loc is None:
                    exhausted = True
                    break
                job = to_job(loc, tasks)
                if job.id in done:
                    if on_skip is not None:
                        on_skip(job.id)
                    continue
                if job.id in skip:
                    continue
                skip.add(job.id)
                if job.obj.get("exit_status") == "error":  # an infra failure upstream stays an error, not reward 0
                    yield graded_record(job, episode_error_grade(job.obj.get("error")))
                    continue
                pending[pool.submit(grade_patch, job.task, job.patch, cfg, run_id)] = job
            if not pending:
                break
            done, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in done:
                job = pending.pop(fut)
                yield graded_record(job, fut.result())
        clean_exit = True
    finally:
        if clean_exit:
            pool.shutdown(wait=True)
        else:
            _abort(pool, pending, run_id)


def _abort(pool: ThreadPoolExecutor, pending: dict[Future[Any], Job], run_id: str) -> None:
    """Interrupted or failed: drop queued work, remove this run's sandboxes, wait for workers to notice."""
    from swerl_cli.sandbox import lifecycle

    old = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # a second signal must not abort the cleanup
            old[sig] = signal.signal(sig, signal.SIG_IGN)
    try:
        for fut in pending:
            fut.cancel()
        lifecycle.sweep()
        pool.shutdown(wait=True, cancel_futures=True)
        lifecycle.sweep()
        try:
            from swerl_cli.sandbox.docker import prune

            prune(run_id)
        except Exception:  # no engine (local backend) or engine gone: nothing to prune
            pass
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
