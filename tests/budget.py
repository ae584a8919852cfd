"""The suite's time budget (docs/testing.md): the slowest items and the total at the end, and a limit per test.

A test's time is its setup + call + teardown, so a session fixture's start lands on the first test that needs it.
A test over `LIMIT_S` fails the session unless `SLOW` lists it (by node id prefix) with its reason. The limit holds
for a quiet machine; `SWERL_TEST_LIMIT_S=N` sets another (0: report only), e.g. for a run beside other jobs.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict

import pytest

LIMIT_S = 120.0
SHOWN = 15

# node id prefix -> why it may take longer than LIMIT_S. One place; a new entry needs a reason a reviewer accepts.
SLOW: dict[str, str] = {
    "tests/realmodel/": "SmolLM2-135M through vLLM's engine with default flags (torch.compile on a CPU): one engine "
    "start per session, shared by every real-model test, lands on the first of them",
    "tests/vllm/": "the tiny model's vLLM server (engine start and warm-up on a CPU) lands on the first vLLM test",
    "tests/training/dapo/test_learning.py": "DAPO must measurably learn (reward rises over iterations): real rollouts, "
    "real updates",
    "tests/training/dapo/test_learning_async.py": "the asynchronous loop must learn too: real rollouts and updates",
    "tests/grading/test_hacks.py": "the tampering corpus: about 180 gradings in one `swerl grade` call (every attack "
    "on an example task, on it as `python3 -m pytest`, on a mined task and on a synthesized task) plus the mined and "
    "synthesized tasks' image builds",
    "tests/reliability/test_fault_injection.py::test_collect_and_grade_200_records_under_faults": "200 records "
    "collected and graded in real containers under SIGKILL + --resume restarts and docker kills (a container per "
    "record, 4 workers on 2 cores): 105-125 s on a quiet clean clone, near the limit either way",
}


def _limit() -> float:
    raw = os.environ.get("SWERL_TEST_LIMIT_S", "")
    try:
        return float(raw) if raw else LIMIT_S
    except ValueError:
        return LIMIT_S


def allowed(nodeid: str) -> str | None:
    """The reason `nodeid` may exceed the limit, or None."""
    return next((why for prefix, why in SLOW.items() if nodeid.startswith(prefix)), None)


class Budget:
    """Sums each test's phases, prints the slowest and the total, and fails a session with an unlisted slow test."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.times: dict[str, float] = defaultdict(float)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.times[report.nodeid] += report.duration

    def over(self) -> list[tuple[str, float]]:
        limit = _limit()
        if limit <= 0:
            return []
        return [(n, s) for n, s in self.times.items() if s > limit and allowed(n) is None]

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter, exitstatus: int) -> None:
        if not self.times:
            return
        tr = terminalreporter
        tr.section(f"suite budget: {SHOWN} slowest of {len(self.times)}")
        for nodeid, secs in sorted(self.times.items(), key=lambda kv: -kv[1])[:SHOWN]:
            mark = "" if secs <= _limit() or allowed(nodeid) else "  OVER THE LIMIT, not listed in tests/budget.py"
            tr.write_line(f"{secs:8.1f}s  {nodeid}{mark}")
        total = time.monotonic() - self.t0
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        tr.write_line(f"total {total / 60:.1f} min wall, {sum(self.times.values()) / 60:.1f} min in tests; load {load}")
        for nodeid, secs in self.over():
            why = f"took {secs:.0f}s > {_limit():.0f}s and is not in tests/budget.py SLOW"
            tr.write_line(f"suite budget: {nodeid} {why}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.over() and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
