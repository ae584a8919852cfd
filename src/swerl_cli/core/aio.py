"""Running and awaiting so that a signal's cancellation is neither late nor lost.

`run` is `asyncio.run` that sees a signal at once whichever thread the kernel delivers it to. Python runs signal
handlers in the main thread only, between bytecodes; asyncio.run's SIGINT handler, and the CLI's SIGTERM/SIGHUP
handler that takes the same path (cli/_common.py), therefore run only when the loop's `select` returns. When the
kernel hands a process-directed signal to another thread (an episode's thread blocked in a sandbox read, say), the
main thread's `select` is not interrupted, and the cancellation waited for the loop's next event: with every episode
in a `sleep 120`, `swerl collect` outlived SIGHUP by two minutes (twice, under a full suite's load).
`run` points the signal module's wakeup fd at a socket the loop reads, so any handled signal wakes the loop and its
handler runs in the same moment.

Python 3.11's `asyncio.wait_for` returns the inner result when the awaiting task is cancelled in the same loop
iteration as the inner awaitable completes (CPython gh-86296, fixed in 3.12): the cancellation is lost. A signal
that cancels `swerl collect` (SIGTERM, SIGHUP, Ctrl-C) right as a policy reply arrived could then let that episode
go on to its next command. `within` uses `asyncio.timeout` (3.11+), which re-raises the cancellation; on 3.10
it falls back to `wait_for`.

    result = await within(client.post(url, json=body), 30.0)   # TimeoutError after 30 s
"""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def within(aw: Awaitable[T], seconds: float | None) -> T:
    """`await aw`, raising TimeoutError (asyncio.TimeoutError) after `seconds` (None: no limit); a cancellation of
    the awaiting task always propagates."""
    if sys.version_info < (3, 11):
        return await asyncio.wait_for(aw, seconds)
    async with asyncio.timeout(seconds):
        return await aw


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, woken by every signal that has a Python handler, whichever thread receives it."""
    return asyncio.run(_woken_by_signals(main))


async def _woken_by_signals(main: Coroutine[Any, Any, T]) -> T:
    if threading.current_thread() is not threading.main_thread():  # signal handlers are the main thread's alone
        return await main
    loop = asyncio.get_running_loop()
    rsock, wsock = socket.socketpair()
    for sock in (rsock, wsock):
        sock.setblocking(False)
    previous = signal.set_wakeup_fd(wsock.fileno(), warn_on_full_buffer=False)
    loop.add_reader(rsock.fileno(), _drain, rsock)  # waking is all it is for: the handler runs after this callback
    try:
        return await main
    finally:
        signal.set_wakeup_fd(previous)
        loop.remove_reader(rsock.fileno())
        rsock.close()
        wsock.close()


def _drain(sock: socket.socket) -> None:
    try:
        while sock.recv(4096):
            pass
    except (BlockingIOError, InterruptedError):
        pass
