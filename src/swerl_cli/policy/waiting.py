"""Long waits are not silent: `announced` says on stderr what is starting, the elapsed time every few seconds and,
when the same thing was started before on this machine, how long that took (an estimate), then how long it took.

    with announced("swerl vllm: starting the engine for M", key="vllm:/abs/M"):
        engine = AsyncLLM.from_engine_args(...)      # minutes on a CPU: loading, compiling, profiling memory

Plain lines (no terminal control): they pass through a collect progress bar (rich prints them above it) and read
the same in a log file. Durations are kept in ~/.cache/swerl/waits.json ($SWERL_WAITS overrides the path).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

EVERY_S = 15.0


def _state_path() -> Path:
    env = os.environ.get("SWERL_WAITS")
    return Path(env) if env else Path.home() / ".cache" / "swerl" / "waits.json"


def last_duration(key: str) -> float | None:
    """Seconds the last completed wait under `key` took, or None (never seen, unreadable state)."""
    try:
        value = json.loads(_state_path().read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def _remember(key: str, seconds: float) -> None:
    path = _state_path()
    try:
        state = json.loads(path.read_text()) if path.exists() else {}
        state = state if isinstance(state, dict) else {}
        state[key] = round(seconds, 1)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass  # an estimate for next time is a nicety, never a failure


@contextmanager
def announced(what: str, *, key: str, every_s: float = EVERY_S) -> Iterator[None]:
    """A line when the wait starts (with the last duration as an estimate), one every `every_s` with the elapsed
    time, and one with the total when it ends; a completed wait's duration is kept for the next estimate."""
    last = last_duration(key)
    estimate = f"; last time {last:.0f} s" if last is not None else ""
    _say(f"{what} (this can take minutes on a CPU{estimate})")
    t0 = time.monotonic()
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every_s):
            left = f", about {max(0.0, last - (time.monotonic() - t0)):.0f} s left" if last is not None else ""
            _say(f"{what}: {time.monotonic() - t0:.0f} s{left}")

    ticker = threading.Thread(target=beat, name="swerl-wait", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
    took = time.monotonic() - t0
    _remember(key, took)
    _say(f"{what}: done in {took:.0f} s")


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
