"""Waiting on a swerl child process that was sent a signal, with a diagnosis instead of a bare timeout.

A child that does not exit in time is a failure to explain, not only to report: `finish` reads the kernel's view of
it (state, wait channel, blocked / ignored / caught signal masks) and, when it runs Python with faulthandler on
(`child_env()` sets PYTHONFAULTHANDLER), makes it print every thread's stack with SIGABRT before killing it, so the
failure message says where it was stuck. The child never outlives the test, so no later test meets its Popen in the
garbage collector (a `ResourceWarning: subprocess ... is still running` there is an error under filterwarnings).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test process's environment with faulthandler on (a SIGABRT then prints the child's stacks)."""
    return {**os.environ, "PYTHONFAULTHANDLER": "1", **(extra or {})}


def _kernel_view(pid: int) -> str:
    lines = []
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        lines = [ln for ln in status.splitlines() if ln.split(":")[0] in ("State", "Threads", "SigPnd", "ShdPnd",
                                                                          "SigBlk", "SigIgn", "SigCgt")]  # fmt: skip
        lines.append("wchan: " + Path(f"/proc/{pid}/wchan").read_text())
    except OSError as e:
        lines.append(f"/proc/{pid}: {e}")
    return "; ".join(lines)


def finish(proc: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes]:
    """`proc.communicate(timeout)`; past the timeout, an AssertionError carrying the kernel's view of the child and
    the stacks it printed on SIGABRT (after which it is killed and reaped)."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        view = _kernel_view(proc.pid)
        proc.send_signal(signal.SIGABRT)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        raise AssertionError(
            f"pid {proc.pid} still running {timeout:.0f} s after its signal ({view}); its stderr:\n"
            + err.decode(errors="replace")[-4000:]
        ) from None
    finally:
        _kill(proc)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


@contextmanager
def reap(proc: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """The block's child is killed and reaped when the block ends, also when an assertion inside it fails."""
    try:
        yield proc
    finally:
        _kill(proc)
