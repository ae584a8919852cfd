"""A cancellation (SIGTERM/SIGHUP/Ctrl-C of `swerl collect`) is never lost to a policy reply arriving in the same
loop iteration: Python 3.11's `asyncio.wait_for` returned the reply instead (CPython gh-86296), and the episode went
on to run its next command (core/aio.py)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from swerl_cli.core.aio import within

SRC = Path(__file__).resolve().parents[2] / "src" / "swerl_cli"


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
    import sys

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
    users = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if p.name != "aio.py" and re.search(r"\bwait_for\(", p.read_text())
    ]
    assert users == []
