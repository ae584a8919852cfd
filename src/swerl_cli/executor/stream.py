"""`stream_jobs`: a bounded window of jobs on an executor, read lazily from their source, results yielded as they
finish; on an interrupt or failure what is pending is cancelled and the caller's cleanup runs on every node."""

from __future__ import annotations

import queue
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, Generic, NamedTuple, TypeVar

from swerl_cli.core.errors import JobLostError

K = TypeVar("K")


class Outcome(NamedTuple):
    """A finished job: its return value and the node that ran it ({"host", "ray_node_id"}; None: no node did)."""

    value: Any
    node: dict[str, Any] | None


def stream_jobs(
    executor: Any,
    jobs: Iterable[tuple[K, Callable[..., Any], tuple[Any, ...]]],
    *,
    cleanup: Callable[[], Any] | None = None,
    stale_cleanup: Callable[[], Any] | None = None,
    on_submit: Callable[[K], Any] | None = None,
) -> Iterator[tuple[K, Outcome | JobLostError]]:
    """Submit `(key, fn, args)` jobs, at most `executor.window` at once, reading `jobs` lazily; yield `(key,
    Outcome)` as each finishes, or `(key, JobLostError)` for a job lost with its worker or node. A job given as
    `(key, None, value)` is already done: it is yielded at once as `Outcome(value, None)`.

    On any exit but exhaustion (Ctrl-C, SIGTERM, a bad input line) pending jobs are cancelled and `cleanup` runs
    on every node, with further signals held off until it is done. After a clean run a cluster executor runs
    `stale_cleanup` on every node (sandboxes left by workers that died with a lost job). `on_submit(key)` is
    called in this thread as each job is handed to the executor (`jobs` itself is read in a helper thread)."""
    if stale_cleanup is not None and getattr(executor, "remote", False):
        executor.on_every_node(stale_cleanup)  # left on any node by an earlier, killed run of the same id
    window: _Window[K] = _Window(executor, jobs, on_submit)
    clean = False
    try:
        while True:
            # Take what the reader has read while the window has room; a read still blocked (a pipe waiting for
            # its next line) never holds back the results of jobs already running.
            yield from window.fill()
            if window.empty:
                break
            yield from window.finished()
        clean = True
    finally:
        window.reader.stop()
        if clean:
            executor.close(stale_cleanup)
        else:
            with signals_held():
                executor.abort(list(window.pending), cleanup)


class _Window(Generic[K]):
    """The jobs in flight on an executor and the reader's pending read of the next one."""

    def __init__(self, executor: Any, jobs: Iterable[Any], on_submit: Callable[[K], Any] | None):
        self.executor, self.on_submit = executor, on_submit
        self.pending: dict[Future[Outcome], K] = {}
        self.reader = _Reader(iter(jobs))
        self.asked: Future[Any] | None = self.reader.ask()

    @property
    def empty(self) -> bool:
        """Nothing in flight and nothing left to read."""
        return not self.pending and self.asked is None

    def fill(self) -> Iterator[tuple[K, Outcome]]:
        """Submit the jobs read so far while the window has room; yield the ones given as already done."""
        while self.asked is not None and self.asked.done() and len(self.pending) < self.executor.window:
            item = self.asked.result()  # a bad input line raises here
            self.asked = None if item is _END else self.reader.ask()
            if item is _END:
                break
            key, fn, args = item
            if fn is None:  # a result known without running anything: passed through in stream order
                yield key, Outcome(args, None)
                continue
            self.pending[self.executor.submit(fn, *args)] = key
            if self.on_submit is not None:
                self.on_submit(key)

    def finished(self) -> Iterator[tuple[K, Outcome | JobLostError]]:
        """Wait (up to 0.5 s) for a job to finish or the next job to be read; yield the jobs that finished."""
        waiting: set[Future[Any]] = set(self.pending)
        if self.asked is not None and len(self.pending) < self.executor.window:
            waiting.add(self.asked)
        done, _ = wait(waiting, timeout=0.5, return_when=FIRST_COMPLETED)
        for fut in done:
            if fut is self.asked:
                continue
            key = self.pending.pop(fut)
            try:
                outcome: Outcome | JobLostError = fut.result()
            except JobLostError as e:
                outcome = e
            yield key, outcome


_END = object()


class _Reader:
    """Reads `jobs` one item at a time in a daemon thread, when asked: the input stays lazy, and a read that
    blocks (stdin waiting for the next record) does not stop finished jobs from being yielded."""

    def __init__(self, source: Iterator[Any]):
        self._source = source
        self._asks: queue.SimpleQueue[Future[Any] | None] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="swerl-read", daemon=True).start()

    def ask(self) -> Future[Any]:
        """A future for the next item (`_END` after the last; the reading error if reading failed)."""
        fut: Future[Any] = Future()
        self._asks.put(fut)
        return fut

    def stop(self) -> None:
        self._asks.put(None)

    def _run(self) -> None:
        while (fut := self._asks.get()) is not None:
            try:
                fut.set_result(next(self._source, _END))
            except BaseException as e:  # handed to the consumer, which raises it in its own thread
                fut.set_exception(e)
                return


class signals_held:  # lower case: used like a function, `with signals_held(): ...`
    """Ignore SIGINT/SIGTERM/SIGHUP inside the block (a second Ctrl-C must not abort a cleanup); main thread only."""

    def __enter__(self) -> None:
        self.old: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                self.old[sig] = signal.signal(sig, signal.SIG_IGN)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
