"""A cancellation (SIGTERM/SIGHUP/Ctrl-C of `swerl collect`) is neither lost nor late (core/aio.py):
- lost: Python 3.11's `asyncio.wait_for` returned a policy reply arriving in the same loop iteration instead
  (CPython gh-86296), and the episode went on to run its next command;
- late: a signal the kernel delivers to a thread other than the main one (an episode's, blocked in a sandbox read)
  did not wake the loop, so its handler waited for the loop's next event (`swerl collect` outlived SIGHUP by 2 min).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from swerl_cli.core.aio import within

SRC = Path(__file__).resolve().parents[2] / "src" / "swerl_cli"

# A worker thread, blocked like an episode in a sandbox read, receives SIGHUP itself while the main thread's loop
# sleeps in select with nothing scheduled; the CLI's handler (SIGHUP takes the Ctrl-C path) must cancel at once.
SIGNAL_TO_A_WORKER = """
import asyncio, signal, sys, threading, time
from swerl_cli.cli import _common
from swerl_cli.core import aio

_common.install_signal_handlers()

def blocker():
    time.sleep(0.5)  # the main thread is in select by now
    signal.pthread_kill(threading.get_ident(), signal.SIGHUP)
    sent.append(time.monotonic())
    time.sleep(6)

async def main():
    try:
        await asyncio.get_running_loop().run_in_executor(None, blocker)
    except asyncio.CancelledError:
        print(f"{time.monotonic() - sent[0]:.2f}", _common._terminated_by)
        raise

sent = []
try:
    (aio.run if sys.argv[1] == "aio" else asyncio.run)(main())
except KeyboardInterrupt:
    pass
"""


def _signal_to_a_worker(runner: str) -> tuple[float, int]:
    """Seconds from the signal to the main task's cancellation, and the signal the CLI recorded."""
    env = {**os.environ, "PYTHONPATH": str(SRC.parent)}
    out = subprocess.run(
        [sys.executable, "-c", SIGNAL_TO_A_WORKER, runner], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seconds, signum = out.stdout.split()
    return float(seconds), int(signum)


def test_a_signal_on_a_worker_thread_cancels_at_once() -> None:
    seconds, signum = _signal_to_a_worker("aio")
    assert signum == 1  # SIGHUP, recorded for the exit code 129
    assert seconds < 1.0


def test_plain_asyncio_run_waits_for_the_next_event() -> None:
    """The control: without the wakeup fd the handler ran only when the blocked thread returned, ~6 s later."""
    seconds, _ = _signal_to_a_worker("plain")
    assert seconds > 4.0


def _src_files_matching(pattern: str) -> list[str]:
    """swerl's source files (core/aio.py aside, which wraps both calls) where `pattern` occurs."""
    return [
        str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if p.name != "aio.py" and re.search(pattern, p.read_text())
    ]


def test_no_asyncio_run_left_in_swerl() -> None:
    """Every event loop in swerl starts through `aio.run`."""
    assert _src_files_matching(r"\basyncio\.run\(") == []


def _cancel_as_it_completes(wrap) -> str:
    """Cancel the awaiting task in the loop iteration in which its awaitable completes; what the task saw."""

    async def main() -> str:
        inner = asyncio.get_running_loop().create_future()

        async def episode() -> str:
            await wrap(inner, 10.0)
            return "went on"

        task = asyncio.ensure_future(episode())
        await asyncio.sleep(0)  # the task is now awaiting `inner`
        inner.set_result("reply")
        task.cancel()
        try:
            return await task
        except asyncio.CancelledError:
            return "cancelled"

    return asyncio.run(main())


def test_within_keeps_a_cancellation_that_races_the_reply() -> None:
    assert _cancel_as_it_completes(within) == "cancelled"


def test_the_race_is_real_for_wait_for_on_this_python() -> None:
    """The control: what `within` replaced loses the cancellation here (3.11); 3.12+ fixed wait_for itself."""
    if sys.version_info >= (3, 12):
        pytest.skip("asyncio.wait_for keeps the cancellation on Python 3.12+")
    assert _cancel_as_it_completes(asyncio.wait_for) == "went on"


def test_within_times_out_and_passes_results_through() -> None:
    async def main() -> tuple[str, str]:
        fast = await within(asyncio.sleep(0, result="ok"), 5.0)
        try:
            await within(asyncio.sleep(5), 0.05)
        except asyncio.TimeoutError:
            return fast, "timeout"
        return fast, "no timeout"

    assert asyncio.run(main()) == ("ok", "timeout")


def test_no_wait_for_left_in_swerl() -> None:
    """Every time-limited await in swerl goes through `within` (core/aio.py keeps the one 3.10 fallback)."""
    assert _src_files_matching(r"\bwait_for\(") == []
