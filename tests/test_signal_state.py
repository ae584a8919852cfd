"""The suite's signal-state check (tests/signal_state.py) on an inner pytest run whose answer is known."""

from __future__ import annotations

import signal

import pytest

from tests.signal_state import SignalState

pytest_plugins = ["pytester"]


def test_a_test_leaving_sigterm_ignored_or_blocked_is_named_and_the_state_put_back(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import signal

        def test_ignores():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

        def test_blocks():
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})

        def test_clean():
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN
            assert signal.SIGHUP not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        """
    )
    before = signal.getsignal(signal.SIGTERM), signal.pthread_sigmask(signal.SIG_BLOCK, [])
    plugin = SignalState()
    result = pytester.runpytest("-p", "no:randomly", plugins=[plugin])
    result.assert_outcomes(passed=3)
    assert [nodeid.split("::")[1] for nodeid, _ in plugin.changed] == ["test_ignores", "test_blocks"]
    assert "SIGTERM" in plugin.changed[0][1]
    assert "SIGHUP" in plugin.changed[1][1]
    result.stdout.fnmatch_lines(["*tests that changed the signal state*", "*test_ignores: SIGTERM*"])
    assert (signal.getsignal(signal.SIGTERM), signal.pthread_sigmask(signal.SIG_BLOCK, [])) == before
