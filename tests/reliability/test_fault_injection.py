"""Fault injection, end to end: `collect` then `grade` of 200 records under random SIGKILLs (each followed by a
`--resume` restart), random `docker kill` of live sandboxes, and a policy server that fails a share of requests.

Every successful episode fixes its task (the scripted policy deletes the bug line), so a reward of 0 can only come
from a fault that leaked as a score. At the end: every id exactly once, every line valid JSON, no container of
either run left, no reward 0, every failed episode graded as an error. The counts are printed (pytest -s shows them).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from swerl_cli.streams.records import Located, Task
from tests.conftest import EXAMPLES
from tests.faults import FaultyServer
from tests.records import jsonl
from tests.sandbox.engines import DOCKER

pytestmark = pytest.mark.docker
BASE = orjson.loads((EXAMPLES / "toy-tasks.jsonl").read_bytes().splitlines()[0])  # greet: delete one line
KEEP, BANG = "tests/test_greet.py::test_greet_keeps_case", "tests/test_greet.py::test_greet_ends_with_bang"
# A test command as cheap as `echo`, in pytest -rA's format: the grade costs a container, not a test run.
TEST_CMD = (
    f"echo '=== short test summary info ==='; echo 'PASSED {BANG}'; "
    f"if grep -q 'name.upper' greet/core.py; then echo 'FAILED {KEEP}'; exit 1; else echo 'PASSED {KEEP}'; fi"
)
SCRIPT = ["Fixing.\n```command\nsed -i '/name = name.upper()/d' greet/core.py\n```", "Done.\n```command\nsubmit\n```"]
TASKS, SAMPLES, SYNTHETIC = 6, 4, 176  # 24 collected episodes + 176 written trajectories = 200 graded records


@pytest.fixture(scope="module")
def tasks() -> list[dict]:
    from swerl_cli.sandbox.build import build_image

    build_image(Task.from_json(Located("examples", 1, BASE)), DOCKER)  # cached: instant after `make setup`
    return [{**BASE, "instance_id": f"greet-{i}", "test_cmd": TEST_CMD} for i in range(TASKS)]


def _containers(run: str) -> list[str]:
    out = subprocess.run(["docker", "ps", "-q", "--filter", f"label=swerl.run={run}"], capture_output=True, text=True)
    return out.stdout.split()


class _DockerKiller(threading.Thread):
    """Kills a random live sandbox of `run` now and then, at most `budget` times."""

    def __init__(self, run: str, rng: random.Random, budget: int):
        super().__init__(daemon=True)
        self.run_label, self.rng, self.budget, self.kills = run, rng, budget, 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.rng.uniform(0.5, 1.5)) and self.kills < self.budget:
            live = _containers(self.run_label)
            if live:
                done = subprocess.run(["docker", "kill", self.rng.choice(live)], capture_output=True)
                self.kills += done.returncode == 0


def _until_done(cmd: list[str], rng: random.Random, sigkills: int) -> tuple[int, list[tuple[float, float]]]:
    """Run `cmd` (with --resume) again after each SIGKILL until it exits 0; returns kills and killed time windows."""
    killed, windows = 0, []
    for _ in range(sigkills + 3):
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if killed < sigkills:
            try:
                proc.wait(timeout=rng.uniform(2.0, 6.0))
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                killed += 1
                windows.append((t0, time.monotonic()))
                continue
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-3000:]
        return killed, windows
    raise AssertionError("never finished")


def _lines(path: Path) -> list[dict]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [orjson.loads(line) for line in data.splitlines()]  # every line valid JSON, or this raises


def test_collect_and_grade_200_records_under_faults(tasks: list[dict], tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("SWERL_FAULT_SEED", "11")))
    run, grade_run = f"rel-faults-{os.getpid()}", f"rel-faults-g-{os.getpid()}"
    (tmp_path / "tasks.jsonl").write_bytes(jsonl(tasks))
    traj, graded = tmp_path / "traj.jsonl", tmp_path / "graded.jsonl"
    swerl = [sys.executable, "-m", "swerl_cli"]
    with FaultyServer(SCRIPT, fail_share=0.15, seed=rng.randrange(1 << 30)) as server:
        collect_killer = _DockerKiller(run, rng, budget=4)
        collect_killer.start()
        cmd = [*swerl, "collect", str(tmp_path / "tasks.jsonl"), "--policy", "openai", "--base-url", server.base_url]
        cmd += ["--samples", str(SAMPLES), "--concurrency", "4", "--run", run, "--max-retries", "0"]
        collect_kills, windows = _until_done([*cmd, "--resume", "-o", str(traj)], rng, sigkills=2)
        collect_killer.stop.set()
        collect_killer.join()
        fault_times = list(server.fault_times)
    trajs = _lines(traj)
    ids = [t["id"] for t in trajs]
    assert sorted(ids) == sorted(f"greet-{i}/{run}/{s}" for i in range(TASKS) for s in range(SAMPLES))
    policy_errors = [t for t in trajs if "PolicyError" in (t["error"] or "")]
    in_killed_runs = sum(any(a <= f <= b for a, b in windows) for f in fault_times)
    assert len(fault_times) - in_killed_runs <= len(policy_errors) <= len(fault_times)
    assert {t["exit_status"] for t in trajs} <= {"submitted", "error"}

    synthetic = [
        {"id": f"syn/{i}", "task": tasks[i % TASKS], "patch": BASE["patch"], "schema": "swerl.trajectory/1"}
        for i in range(SYNTHETIC)
    ]
    (tmp_path / "more.jsonl").write_bytes(jsonl(synthetic))
    killer = _DockerKiller(grade_run, rng, budget=6)
    killer.start()
    cmd = [*swerl, "grade", str(traj), str(tmp_path / "more.jsonl"), "--workers", "4", "--run-id", grade_run]
    grade_kills, _ = _until_done([*cmd, "--resume", "-o", str(graded)], rng, sigkills=3)
    killer.stop.set()
    killer.join()

    recs = _lines(graded)
    assert sorted(r["id"] for r in recs) == sorted([*ids, *(s["id"] for s in synthetic)])  # each id exactly once
    assert _containers(run) == []
    assert _containers(grade_run) == []
    for r in recs:
        g = r["grade"]
        assert (g["status"], g["reward"]) in (("resolved", 1.0), ("error", None)), (r["id"], g)  # never a 0
        if r.get("exit_status") == "error":
            assert g["status"] == "error", r["id"]
    errors = Counter((r["grade"]["error"] or "").split(":")[0] for r in recs if r["grade"]["status"] == "error")
    print(
        f"\nfault injection: {len(recs)} graded, {sum(r['grade']['status'] == 'resolved' for r in recs)} resolved; "
        f"policy faults injected {dict(server.injected)} -> {len(policy_errors)} error trajectories "
        f"({in_killed_runs} in SIGKILLed runs); SIGKILL+resume: collect {collect_kills}, grade {grade_kills}; "
        f"docker kill: collect {collect_killer.kills}, grade {killer.kills}; grade errors by cause {dict(errors)}"
    )


def test_docker_kill_during_the_test_run_is_an_error_not_a_zero(tasks: list[dict]) -> None:
    """The kill lands while test_cmd runs (one test reported, the next one never): the partial log must not score."""
    from swerl_cli.grading.grade import GradeConfig, grade_patch

    run = f"rel-kill-test-{os.getpid()}"
    slow = {**tasks[0], "test_cmd": f"echo '=== short test summary info ==='; echo 'PASSED {BANG}'; sleep 30"}

    def kill_when_running() -> None:
        for _ in range(200):
            live = _containers(run)
            if live:
                time.sleep(1.5)  # past patch application, inside `sleep 30`
                subprocess.run(["docker", "kill", *live], capture_output=True)
                return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_when_running)
    killer.start()
    grade = grade_patch(Task.from_json(Located("t", 1, slow)), BASE["patch"], GradeConfig(), run)
    killer.join()
    assert (grade["status"], grade["reward"]) == ("error", None), grade
    assert _containers(run) == []
