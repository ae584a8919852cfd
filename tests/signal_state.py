"""Every test leaves the process's signal state as it found it; the ones that did not are named at the end.

A child inherits its parent's ignored signals and its blocked signal mask through fork and exec. A test that leaves
SIGTERM ignored or blocked in a pytest worker (an in-process library that installs its own handling and never puts
it back) makes a later test's `swerl` child deaf to the SIGTERM that test sends: the later test hangs and fails,
far from the cause. So each test's state is compared before and after and put back when it changed; a test that
changed what a child inherits (an ignored signal, the blocked mask; a Python handler is reset at exec) is listed in
the terminal summary (the list travels from the workers in `user_properties`).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Generator

import pytest

WATCHED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_KEY = "signal_state_changed"
_BEFORE = pytest.StashKey[tuple[dict[int, object], frozenset[int]]]()


def _state() -> tuple[dict[int, object], frozenset[int]]:
    handlers: dict[int, object] = {sig: signal.getsignal(sig) for sig in WATCHED}
    blocked = frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, []))
    return handlers, blocked


def _describe(before: tuple[dict[int, object], frozenset[int]], after: tuple[dict[int, object], frozenset[int]]) -> str:
    parts = [
        f"{signal.Signals(sig).name} {before[0][sig]!r} -> {after[0][sig]!r}"
        for sig in WATCHED  # only what a child inherits through exec: SIG_IGN (a Python handler becomes SIG_DFL)
        if after[0][sig] is not before[0][sig] and signal.SIG_IGN in (before[0][sig], after[0][sig])
    ]
    if after[1] != before[1]:
        names = sorted(signal.Signals(s).name for s in after[1] ^ before[1])
        parts.append(f"blocked mask changed for {', '.join(names)}")
    return "; ".join(parts)


class SignalState:
    def __init__(self) -> None:
        self.changed: list[tuple[str, str]] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if threading.current_thread() is threading.main_thread():
            item.stash[_BEFORE] = _state()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
        before = item.stash.get(_BEFORE, None)
        if call.when == "teardown" and before is not None:  # teardown done, its report not built yet
            after = _state()
            if after != before:  # any change is put back; only an inheritable one is named
                for sig, handler in before[0].items():
                    signal.signal(sig, handler)  # type: ignore[arg-type]
                signal.pthread_sigmask(signal.SIG_SETMASK, before[1])
            what = _describe(before, after)
            if what:
                item.user_properties.append((_KEY, what))
        yield

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            self.changed += [(report.nodeid, str(v)) for k, v in report.user_properties if k == _KEY]

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.changed:
            terminalreporter.section("tests that changed the signal state (put back after each)")
            for nodeid, what in self.changed:
                terminalreporter.write_line(f"{nodeid}: {what}")
