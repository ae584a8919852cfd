"""`swerl tasks validate`: grade the gold patch and the empty patch R times per task.

A task is valid iff the gold patch resolves in every repeat and the empty patch in none. A test whose status
differs across the repeats of the same patch is flaky.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from swerl_cli.grading.engine import _abort, new_run_id
from swerl_cli.grading.grade import GradeConfig, grade_patch
from swerl_cli.records import Task


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


def validate_tasks(tasks: Iterable[Task], cfg: GradeConfig, repeats: int) -> Iterator[dict[str, Any]]:
    """Yield each task record (input order) with a `validation` field; work runs `cfg.workers` at a time."""
    run_id = cfg.run_id or new_run_id()
    pool = ThreadPoolExecutor(max_workers=cfg.workers, thread_name_prefix="swerl-validate")
    ok = False
    jobs: list[tuple[Task, list, list]] = []
    try:
        for task in tasks:  # submit everything first so all workers stay busy; yield in input order
            gold = [pool.submit(grade_patch, task, task.patch or "", cfg, run_id) for _ in range(repeats)]
            empty = [pool.submit(grade_patch, task, "", cfg, run_id) for _ in range(repeats)]
            jobs.append((task, gold, empty))
        for task, gold, empty in jobs:
            out = task.to_json()
            out["validation"] = summarize(task, [f.result() for f in gold], [f.result() for f in empty])
            yield out
        ok = True
    finally:
        if ok:
            pool.shutdown(wait=True)
        else:
            _abort(pool, {f: None for _, g, e in jobs for f in (*g, *e)}, run_id)
