"""Grading overhead per instance (everything except the test run itself) and concurrency on this machine.

1. Overhead: grade the gold patch of each bundled example task; overhead = duration_s - test_duration_s.
2. Capacity: ramp concurrent sandboxes 1, 2, 4, ... up to SWERL_BENCH_MAX_SANDBOXES (default 64), each running a
   command; the highest level with no error is the capacity.
3. Throughput: graded instances per minute with --workers at 4 and at that capacity.
"""

from __future__ import annotations

import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson

from swerl_cli.grading.grade import GradeConfig, grade_patch
from swerl_cli.grading.jobs import grade_records
from swerl_cli.sandbox import create, open_sandbox
from swerl_cli.sandbox.build import build_image
from swerl_cli.streams.records import Located, Task

DOCKER = create("docker")  # the default engine, built once as a command builds its backend

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _tasks() -> list[dict]:
    out = []
    for name in ("tasks.jsonl", "toy-tasks.jsonl"):
        p = EXAMPLES / name
        if p.exists():
            out += [orjson.loads(line) for line in p.read_bytes().splitlines() if line.strip()]
    return out


def _hold(task: Task, i: int) -> None:
    with open_sandbox(task, DOCKER, run_id="bench-ramp", hygiene=False) as sb:
        if sb.run(f"echo {i}").output != f"{i}\n":
            raise RuntimeError("bad output")


def _throughput(recs: list[dict], workers: int) -> tuple[float, int]:
    locs = [Located("bench", i, {"id": f"r{i}", "task": r, "patch": r["patch"]}) for i, r in enumerate(recs)]
    t0 = time.perf_counter()
    out = list(grade_records(locs, GradeConfig(workers=workers, run_id="bench-grade")))
    errors = sum(r["grade"]["status"] == "error" for r in out)
    return len(out) / (time.perf_counter() - t0) * 60, errors


def main() -> None:
    recs = _tasks()
    if not recs:
        raise RuntimeError("no example tasks (examples/tasks.jsonl)")
    tasks = [Task.from_json(Located("examples", i, r)) for i, r in enumerate(recs)]
    for t in tasks:
        build_image(t, DOCKER)
    overheads, tests = [], []
    for t in tasks:
        g = grade_patch(t, t.patch, GradeConfig(), "bench-overhead")
        assert g["status"] == "resolved", (t.instance_id, g["error"])
        overheads.append(g["duration_s"] - g["test_duration_s"])
        tests.append(g["test_duration_s"])
    print(f"grading overhead per instance (excl. test run), {len(tasks)} tasks, sequential:")
    print(
        f"  median {statistics.median(overheads):.3f} s, max {max(overheads):.3f} s (target < 0.5 s); "
        f"test run median {statistics.median(tests):.3f} s"
    )

    cap, level, limit = 0, 1, int(os.environ.get("SWERL_BENCH_MAX_SANDBOXES", "64"))
    print("concurrent sandboxes (start, run a command, remove):")
    while level <= limit:
        t0 = time.perf_counter()
        try:
            with ThreadPoolExecutor(level) as pool:
                list(pool.map(lambda i: _hold(tasks[i % len(tasks)], i), range(level)))
        except Exception as e:  # the first failing level ends the ramp
            print(f"  {level:>3}: FAILED ({str(e).splitlines()[0][:100]})")
            break
        print(f"  {level:>3}: ok in {time.perf_counter() - t0:.1f} s")
        cap = level
        level *= 2
    print(f"capacity: {cap} concurrent sandboxes without error (ramp capped at {limit})")
    for workers in sorted({4, cap}):
        batch = [recs[i % len(recs)] for i in range(max(2 * workers, len(recs)))]
        rate, errors = _throughput(batch, workers)
        print(
            f"throughput with --workers {workers}: {rate:.1f} graded instances/minute ({len(batch)} graded, "
            f"{errors} errors)"
        )
