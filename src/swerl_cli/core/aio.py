"""Awaiting with a time limit without losing a cancellation.

Python 3.11's `asyncio.wait_for` returns the inner result when the awaiting task is cancelled in the same loop
iteration as the inner awaitable completes (CPython gh-86296, fixed in 3.12): the cancellation is lost. A signal
that cancels `swerl collect` (SIGTERM, SIGHUP, Ctrl-C) right as a policy reply arrived could then let that episode
go on to its next command. (It is not what held `collect` 120 s after SIGHUP twice under a full suite's load:
that hang outlived this fix; see docs/reliability.md.) `within` uses `asyncio.timeout` (3.11+), which re-raises
the cancellation; on 3.10 it falls back to `wait_for`.

    result = await within(client.post(url, json=body), 30.0)   # TimeoutError after 30 s
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(aw: Awaitable[T], seconds: float | None) -> T:
    """`await aw`, raising TimeoutError (asyncio.TimeoutError) after `seconds` (None: no limit); a cancellation of
    the awaiting task always propagates."""
    if sys.version_info < (3, 11):
        return await asyncio.wait_for(aw, seconds)
    async with asyncio.timeout(seconds):
        return await aw
