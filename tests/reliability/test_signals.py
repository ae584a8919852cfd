"""Defect 2: SIGTERM / SIGHUP during `grade` and `collect` with parallel sandboxes remove every container (exit 143).

Also: a trajectory whose episode failed is graded as an error without a sandbox, never as reward 0.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from swerl_cli.streams.records import Located, Task
from tests.conftest import EXAMPLES, run_swerl
from tests.faults import FaultyServer
from tests.procs import child_env, finish
from tests.records import jsonl
from tests.sandbox.engines import DOCKER

TASK = orjson.loads((EXAMPLES / "toy-tasks.jsonl").read_bytes().splitlines()[0])


@pytest.fixture(scope="module")
def task() -> dict:
    from swerl_cli.sandbox.build import build_image

    build_image(Task.from_json(Located("examples", 1, TASK)), DOCKER)  # cached by name: instant when `make setup` ran
    return TASK


def _containers(run: str) -> list[str]:
    out = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=swerl.run={run}"], capture_output=True, text=True)
    return out.stdout.split()


def _terminate_when_running(
    cmd: list[str], run: str, n: int, sig: int, *, to_a_worker_thread: bool = False, limit: float = 120
) -> tuple[int, str]:
    """Start `cmd`, send `sig` once its `n` sandboxes are up; its exit code and stderr. `to_a_worker_thread`: the
    signal goes to one of its threads other than the main one (`kill` of that thread's id: the kernel delivers a
    process signal to the thread named when it can take it), as the kernel may choose on its own under load."""
    # A command still running `limit` s after the signal fails the test with its kernel state and the stacks it
    # prints on SIGABRT (tests/procs.py), and is killed.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
    deadline = time.monotonic() + 120
    while len(_containers(run)) < n and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert len(_containers(run)) >= n, "the sandboxes never came up"
    time.sleep(0.5)
    if to_a_worker_thread:
        time.sleep(2.0)  # the episodes are in their first command by now
        workers = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid]
        assert workers, "no thread besides the main one"
        os.kill(workers[-1], sig)
    else:
        proc.send_signal(sig)
    try:
        _, err = finish(proc, limit)
    except AssertionError:
        subprocess.run(["docker", "rm", "-f", *_containers(run)], capture_output=True)
        raise
    return proc.returncode, err.decode()


@pytest.mark.docker
def test_sigterm_during_parallel_grade_removes_every_container(task: dict, tmp_path: Path) -> None:
    run = f"rel-term-grade-{os.getpid()}"
    slow = {**task, "test_cmd": "sleep 120"}
    trajs = [{"id": f"t/{i}", "task": slow, "patch": "", "schema": "swerl.trajectory/1"} for i in range(4)]
    (tmp_path / "in.jsonl").write_bytes(jsonl(trajs))
    cmd = [sys.executable, "-m", "swerl_cli", "grade", str(tmp_path / "in.jsonl"), "--workers", "4"]
    cmd += ["--run-id", run, "-o", str(tmp_path / "g.jsonl")]
    code, err = _terminate_when_running(cmd, run, 4, signal.SIGTERM)
    assert code == 143, err[-2000:]
    assert "terminated by SIGTERM" in err
    assert _containers(run) == []


@pytest.mark.docker
def test_sighup_during_collect_removes_every_container(task: dict, tmp_path: Path) -> None:
    run = f"rel-hup-collect-{os.getpid()}"
    (tmp_path / "tasks.jsonl").write_bytes(jsonl([task]))
    with FaultyServer(["Waiting.\n```command\nsleep 120\n```"]) as server:
        cmd = [sys.executable, "-m", "swerl_cli", "collect", str(tmp_path / "tasks.jsonl"), "--samples", "3"]
        cmd += ["--policy", "openai", "--base-url", server.base_url, "--concurrency", "3", "--run", run]
        code, err = _terminate_when_running([*cmd, "-o", str(tmp_path / "t.jsonl")], run, 3, signal.SIGHUP)
    assert code == 129, err[-2000:]
    assert _containers(run) == []


@pytest.mark.docker
def test_sighup_on_an_episode_thread_stops_collect_at_once(task: dict, tmp_path: Path) -> None:
    """The signal lands on a thread blocked in its sandbox's `sleep 120`, not on the main one: the event loop must
    still wake (core/aio.py `run`); it used to wait for the command to end, two minutes (docs/reliability.md)."""
    run = f"rel-hup-thread-{os.getpid()}"
    (tmp_path / "tasks.jsonl").write_bytes(jsonl([task]))
    with FaultyServer(["Waiting.\n```command\nsleep 120\n```"]) as server:
        cmd = [sys.executable, "-m", "swerl_cli", "collect", str(tmp_path / "tasks.jsonl"), "--samples", "2"]
        cmd += ["--policy", "openai", "--base-url", server.base_url, "--concurrency", "2", "--run", run]
        cmd += ["-o", str(tmp_path / "t.jsonl")]
        code, err = _terminate_when_running(cmd, run, 2, signal.SIGHUP, to_a_worker_thread=True, limit=60)
    assert code == 129, err[-2000:]
    assert _containers(run) == []


def test_failed_episode_is_graded_as_error_without_a_sandbox(tmp_path: Path) -> None:
    traj = {"id": "t/0", "task": TASK, "patch": "", "exit_status": "error", "error": "PolicyError: server down"}
    (tmp_path / "in.jsonl").write_bytes(jsonl([traj]))
    res = run_swerl("grade", str(tmp_path / "in.jsonl"), "--sandbox", "local", "--repo-dir", str(tmp_path))
    assert res.returncode == 0, res.stderr.decode()
    grade = orjson.loads(res.stdout)["grade"]
    assert grade["status"] == "error"
    assert grade["reward"] is None
    assert "server down" in grade["error"]


@pytest.mark.docker
def test_sigterm_during_tasks_validate_leaves_no_temp_file_or_container(task: dict, tmp_path: Path) -> None:
    """Defect 11 (validate): SIGTERM left `.NAME.PID.tmp`; now the output is appended in place, whole lines only."""
    run = f"rel-term-validate-{os.getpid()}"
    (tmp_path / "tasks.jsonl").write_bytes(jsonl([{**task, "test_cmd": "sleep 120"}]))
    out = tmp_path / "v.jsonl"
    cmd = [sys.executable, "-m", "swerl_cli", "tasks", "validate", str(tmp_path / "tasks.jsonl"), "-r", "1"]
    cmd += ["--workers", "2", "--run-id", run, "-o", str(out)]
    code, err = _terminate_when_running(cmd, run, 2, signal.SIGTERM)
    assert code == 143, err[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.jsonl"]  # nothing finished: no output, no temp
    assert _containers(run) == []


@pytest.mark.docker
@pytest.mark.podman
def test_sigterm_during_a_podman_validate_prunes_podmans_sandboxes_and_leaves_dockers(task: dict, tmp_path: Path):
    """Issue 42: an interrupted `tasks validate --sandbox podman` ran its cleanup with the default backend, so it
    pruned Docker's containers of the run id and not its own."""
    from tests.conftest import containers

    run = f"rel-term-podman-{os.getpid()}"
    decoy = subprocess.run(
        ["docker", "run", "-d", "--network", "none", "--label", f"swerl.run={run}", "--label", "swerl.managed=1",
         "--label", f"swerl.pid={os.getpid()}", TASK["image"], "sleep", "300"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert decoy.returncode == 0, decoy.stderr
    (tmp_path / "tasks.jsonl").write_bytes(jsonl([{**task, "test_cmd": "sleep 120"}]))
    cmd = [sys.executable, "-m", "swerl_cli", "tasks", "validate", str(tmp_path / "tasks.jsonl"), "-r", "1"]
    cmd += ["--workers", "2", "--sandbox", "podman", "--run-id", run, "-o", str(tmp_path / "v.jsonl")]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
        deadline = time.monotonic() + 120
        while len(containers(f"swerl.run={run}", "podman")) < 2 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            time.sleep(0.2)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _, err = finish(proc, 120)
        assert proc.returncode == 143, err.decode()[-2000:]
        assert containers(f"swerl.run={run}", "podman") == []  # its own sandboxes: gone
        assert containers(f"swerl.run={run}", "docker") == [decoy.stdout.strip()[:12]]  # Docker's: untouched
    finally:
        subprocess.run(["docker", "rm", "-f", decoy.stdout.strip()], capture_output=True)
        subprocess.run(["podman", "rm", "-f", *containers(f"swerl.run={run}", "podman")], capture_output=True)
