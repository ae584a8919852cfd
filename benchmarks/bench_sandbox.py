"""Per-command round trip: swerl's persistent framed shell vs `docker exec` (SDK exec_run and CLI), same command.

Also times sandbox start/close and the git-hygiene step (fast path on a cleaned repo vs full cleanup).
Needs a Docker engine and the swerl-base image. Sizes: SWERL_BENCH_SANDBOX_N (default 300 shell commands).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time

from swerl_cli.sandbox import create, open_sandbox
from swerl_cli.sandbox.docker import docker_client
from swerl_cli.sandbox.gitops import hygiene_command
from swerl_cli.streams.records import Task

DOCKER = create("docker")  # the default engine, built once as a command builds its backend

CMD = "echo hello"
TASK = Task(
    instance_id="bench__sandbox-1",
    repo="bench/sandbox",
    base_commit="HEAD",
    problem_statement="",
    image=os.environ.get("SWERL_BASE_IMAGE", "swerl-base"),
    workdir="/tmp",
    test_cmd="true",
)


def _per_call(fn, n: int) -> float:
    fn()  # warm up
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    n = int(os.environ.get("SWERL_BENCH_SANDBOX_N", "300"))
    t0 = time.perf_counter()
    with open_sandbox(TASK, DOCKER, run_id="bench-sandbox", hygiene=False) as sb:
        start_s = time.perf_counter() - t0
        cid = sb.container.id
        container = docker_client().containers.get(cid)
        assert sb.run(CMD).output == "hello\n"
        shell = _per_call(lambda: sb.run(CMD), n)
        sdk = _per_call(lambda: container.exec_run(["bash", "-c", CMD]), max(10, n // 10))
        cli = _per_call(
            lambda: subprocess.run(["docker", "exec", cid, "bash", "-c", CMD], capture_output=True), max(10, n // 15)
        )
        sb.run(
            "mkdir -p /tmp/r && cd /tmp/r && git init -q && for i in $(seq 200); do echo $i > f$i; git add f$i; "
            "git commit -qm $i; done && git tag t1 && git checkout -q HEAD~100 && cd /tmp",
            timeout_s=300,
        )
        base = sb.run("git -C /tmp/r rev-parse HEAD").output.strip()
        t1 = time.perf_counter()
        first = sb.run(f"cd /tmp/r && {hygiene_command(base)}", 300).output.strip()
        slow = time.perf_counter() - t1
        t1 = time.perf_counter()
        second = sb.run(hygiene_command(base), 300).output.strip()
        fast = time.perf_counter() - t1
        t1 = time.perf_counter()
    close_s = time.perf_counter() - t1
    print(f"{'what':<44} {'median ms':>10} {'vs shell':>9}")
    for name, v in (
        ("swerl sandbox.run (persistent shell)", shell),
        ("docker SDK exec_run", sdk),
        ("docker CLI `docker exec`", cli),
    ):
        print(f"{name:<44} {v * 1e3:>10.2f} {v / shell:>8.1f}x")
    print(f"\nspeedup vs exec_run: {sdk / shell:.1f}x (target >= 10x); vs docker CLI: {cli / shell:.1f}x")
    print(f"sandbox start {start_s:.3f} s, close {close_s:.3f} s")
    print(
        f"hygiene on a 200-commit repo with tag + future commits: full cleanup ({first}) {slow:.3f} s, "
        f"repeat ({second}) {fast:.3f} s"
    )
