"""Container bookkeeping: every live sandbox is registered so SIGTERM, Ctrl-C and interpreter exit remove it."""

from __future__ import annotations

import atexit
import os
import signal
import threading
from collections.abc import Callable

LABEL_RUN = "swerl.run"
LABEL_INSTANCE = "swerl.instance"
LABEL_PID = "swerl.pid"
LABEL_MANAGED = "swerl.managed"

_lock = threading.Lock()
_live: dict[int, Callable[[], None]] = {}
_atexit_done = False
_signals_done = False


def register(key: int, closer: Callable[[], None]) -> None:
    """Remember how to remove a live sandbox until `unregister`."""
    _install()
    with _lock:
        _live[key] = closer


def unregister(key: int) -> None:
    """Forget a sandbox that was removed normally."""
    with _lock:
        _live.pop(key, None)


def sweep() -> int:
    """Close every registered sandbox of this process (used at exit and after an interrupt); returns the count."""
    with _lock:
        closers = list(_live.values())
        _live.clear()
    for close in closers:
        try:
            close()
        except Exception:  # best effort at teardown; the label-based prune is the backstop
            pass
    return len(closers)


def _on_term(signum: int, frame: object) -> None:
    # Raise into the main thread's current frame, so `with open_sandbox(...)` blocks unwind and remove containers.
    raise SystemExit(128 + signum)


def _install() -> None:
    """Install the atexit sweep once, and SIGTERM/SIGHUP handlers the first time this runs in the main thread."""
    global _atexit_done, _signals_done
    if not _atexit_done:
        _atexit_done = True
        atexit.register(sweep)
    if _signals_done or threading.current_thread() is not threading.main_thread():
        return
    _signals_done = True
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _on_term)
        except (ValueError, OSError):
            pass


def install() -> None:
    """Call once from the main thread when sandboxes will be started from worker threads (asyncio.to_thread)."""
    _install()


def run_labels(run_id: str, instance_id: str) -> dict[str, str]:
    """Labels put on every swerl container (`swerl sandbox prune` finds leftovers by them)."""
    return {LABEL_MANAGED: "1", LABEL_RUN: run_id, LABEL_INSTANCE: instance_id, LABEL_PID: str(os.getpid())}
