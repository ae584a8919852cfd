"""`swerl tasks validate`: grade the gold patch and the empty patch R times per task.

A task is valid iff the gold patch resolves in every repeat and the empty patch in none. A test whose status
differs across the repeats of the same patch is flaky.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from swerl_cli.core.config_stop import PREFIX, ConfigErrorStop
from swerl_cli.core.errors import JobLostError
from swerl_cli.executor import open_executor, stream_jobs
from swerl_cli.grading.grade import GradeConfig, error_grade, grade_patch
from swerl_cli.grading.jobs import new_run_id
from swerl_cli.sandbox import run_cleanup
from swerl_cli.streams.records import Located, Task, check_schema
from swerl_cli.streams.task_fields import task_row_error


def summarize(task: Task, gold: list[dict[str, Any]], empty: list[dict[str, Any]]) -> dict[str, Any]:
    """The `validation` field from the grades of R gold and R empty runs."""
    flaky: set[str] = set()
    for runs in (gold, empty):
        maps = [m for m in (((g.get("tests") or {}).get("status") or {}) for g in runs) if m]
        for tid in {t for m in maps for t in m}:
            if len({m.get(tid) for m in maps}) > 1:  # a different status, or absent in some repeat
                flaky.add(tid)
    errors = sorted({g["error"] for g in [*gold, *empty] if g.get("status") == "error" and g.get("error")})
    gold_ok = sum(g["status"] == "resolved" for g in gold)
    empty_ok = sum(g["status"] == "resolved" for g in empty)
    return {
        "valid": bool(task.patch) and gold_ok == len(gold) and empty_ok == 0 and not errors,
        "repeats": len(gold),
        "gold_resolved": gold_ok,
        "empty_resolved": empty_ok,
        "gold_statuses": [g["status"] for g in gold],
        "empty_statuses": [g["status"] for g in empty],
        "flaky_tests": sorted(flaky),
        "errors": errors,
    }


def validate_tasks(
    tasks: Iterable[Task], cfg: GradeConfig, repeats: int, *, executor: Any = None
) -> Iterator[dict[str, Any]]:
    """Yield each task record (input order) with a `validation` field; its 2R grading jobs run on `executor`
    (default: `cfg.workers` threads here). A lost job counts as an error run, so the task is not valid."""
    run_id = cfg.run_id or new_run_id()
    ex = executor or open_executor(None, cfg.workers, name="swerl-validate")
    tasks = list(tasks)
    jobs = (
        ((i, kind), grade_patch, (task, (task.patch or "") if kind == "gold" else "", cfg, run_id))
        for i, task in enumerate(tasks)
        for kind in ("gold", "empty")
        for _ in range(repeats)
    )
    runs: dict[int, dict[str, list[dict[str, Any]]]] = {}
    nodes: dict[int, set[str]] = {}
    ready = 0  # tasks before this index have been yielded
    stop = ConfigErrorStop(validation_error, "tasks")  # the first tasks all failing on the configuration: stop
    for (i, kind), outcome in stream_jobs(
        ex,
        jobs,
        cleanup=run_cleanup(run_id, cfg.sandbox_backend),
        stale_cleanup=run_cleanup(run_id, cfg.sandbox_backend, stale_only=True),
    ):
        if isinstance(outcome, JobLostError):
            grade = error_grade(f"JobLostError: {outcome}")
        else:
            grade = outcome.value
            node = outcome.node or {}
            nodes.setdefault(i, set()).add(str(node.get("ray_node_id") or node.get("host")))
        runs.setdefault(i, {"gold": [], "empty": []})[kind].append(grade)
        while ready < len(tasks) and sum(map(len, runs.get(ready, {}).values())) == 2 * repeats:
            task, done = tasks[ready], runs.pop(ready)
            out = task.to_json()
            out["validation"] = {**summarize(task, done["gold"], done["empty"]), "nodes": sorted(nodes.pop(ready, ()))}
            yield from stop.push(out)
            ready += 1
    yield from stop.finish()


def validation_error(record: dict[str, Any]) -> str | None:
    """The error of a validated task whose every error is a configuration error, None for any other."""
    errors = record["validation"]["errors"]
    return str(errors[0]) if errors and all(str(e).startswith(PREFIX) for e in errors) else None


def split_tasks(rows: Iterable[Located], images: bool) -> tuple[list[Task], list[dict[str, Any]]]:
    """(the tasks a sandbox can run, a record per refused row: no sandbox starts for it, its `validation` says why
    and names the field). `images`: whether the sandbox backend starts from the tasks' images (checked per row)."""
    tasks: list[Task] = []
    refused: list[dict[str, Any]] = []
    for loc in rows:
        check_schema(loc, "swerl.task")
        task = Task.from_json(loc)
        row_error = task_row_error(loc, task, images=images)
        if row_error is None:
            tasks.append(task)
        else:
            summary = {**summarize(task, [], []), "valid": False, "errors": [str(row_error)]}
            refused.append({**task.to_json(), "validation": {**summary, "invalid_field": row_error.field}})
    return tasks, refused
