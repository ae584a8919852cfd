"""Job executors: where `grade`, `tasks validate`, `tasks pull` and `collect --ray` run their jobs (docs/scale.md).

A job is a plain picklable function call, `fn(*args)`, that starts its own sandbox and returns a JSON-ready value.
An executor runs jobs and hands back `concurrent.futures.Future`s that resolve to `Outcome(value, node)`:

- `LocalExecutor`: a thread pool on this machine's Docker engine (the default);
- `RayExecutor` (`executor/ray.py`, the only module that imports Ray): each job is a Ray task on some node of a
  cluster, with a resource request per job, retried on another node when its node is lost.

`stream_jobs` keeps a bounded window of jobs in flight and yields results as they finish; on an interrupt or
failure it cancels what is pending and runs the caller's cleanup on every node.
"""

from __future__ import annotations

import os
import queue
import signal
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar

from swerl_cli.core.config import flag
from swerl_cli.core.errors import ConfigError, JobLostError

K = TypeVar("K")
RAY_ENV = "SWERL_RAY_ADDRESS"


class Outcome(NamedTuple):
    """A finished job: its return value and the node that ran it ({"host", "ray_node_id"}; None: no node did)."""

    value: Any
    node: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Placement:
    """What each job asks of the cluster (Ray only): CPUs, memory, and retries when its node is lost."""

    cpus: float = 0.5
    memory_gb: float = 2.0
    max_retries: int = 2

    def __post_init__(self) -> None:
        if self.cpus < 0 or self.memory_gb < 0:
            raise ConfigError(f"--episode-cpus and --episode-memory-gb must be >= 0; got {self.cpus}, {self.memory_gb}")
        if self.max_retries < 0:
            raise ConfigError(f"--max-episode-retries must be >= 0; got {self.max_retries}")


@dataclass(frozen=True, slots=True)
class JobSettings:
    """The fields every command that runs sandbox jobs shares (collect, grade): where task images come from, and
    what each job asks of a Ray cluster. Configs extend it; flags are the kebab-case twins of the fields."""

    registry: str | None = flag(
        None, "Pull every task image from this mirror (same name and tag).", metavar="HOST[:PORT]/NAMESPACE"
    )
    pull: bool = flag(
        True, "Pull a task's missing image (default) or fail naming the fetch command.", names=("--pull/--no-pull",)
    )
    image_budget_gb: float | None = flag(
        None, "Remove least recently used pulled images not in use past this many GB.", metavar="GB"
    )
    ray: str | None = flag(  # jobs run on the nodes of this cluster
        None,
        "Run jobs on the Ray cluster at HOST:PORT ('auto': the cluster this machine belongs to); default: "
        "$SWERL_RAY_ADDRESS, else this machine.",
        metavar="ADDRESS",
    )
    # Ray's resource request per job (paper: 0.5 CPU, 2 GiB per agent)
    episode_cpus: float = flag(0.5, "With --ray: CPUs Ray reserves per job [default: 0.5].", metavar="N")
    episode_memory_gb: float = flag(2.0, "With --ray: memory Ray reserves per job [default: 2].", metavar="GB")
    max_episode_retries: int = flag(
        2, "With --ray: reruns of a job whose node or worker died, then an error record [default: 2].", metavar="N"
    )

    def check_job_settings(self) -> None:
        """ConfigError on a bad mirror, budget or Ray request (call from the config's __post_init__)."""
        from swerl_cli.sandbox.images import ImageSettings

        ImageSettings(registry=self.registry, budget_gb=self.image_budget_gb)  # validates both fields
        self.placement()

    def placement(self) -> Placement:
        """The per-job request on a Ray cluster."""
        return Placement(self.episode_cpus, self.episode_memory_gb, self.max_episode_retries)


class Executor(Protocol):
    """Runs jobs; `window` is how many jobs a caller keeps submitted at once."""

    window: int

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Outcome]: ...

    def share(self, obj: Any) -> Any: ...

    def on_every_node(self, fn: Callable[..., Any], /, *args: Any, timeout_s: float | None = ...) -> list[Outcome]: ...

    def abort(self, pending: Iterable[Future[Any]], cleanup: Callable[[], Any] | None) -> None: ...

    def close(self, stale_cleanup: Callable[[], Any] | None = None) -> None: ...


def this_node(ray_node_id: str | None = None) -> dict[str, Any]:
    """The node record put on every output record."""
    return {"host": socket.gethostname(), "ray_node_id": ray_node_id}


def node_label(node: dict[str, Any] | None) -> str:
    """A short name for progress lines: the Ray node id's first 8 hex digits, else the host name."""
    if not node:
        return "?"
    return (node.get("ray_node_id") or "")[:8] or str(node.get("host"))


def _local_job(fn: Callable[..., Any], args: tuple[Any, ...]) -> Outcome:
    return Outcome(fn(*args), this_node())


class LocalExecutor:
    """`workers` threads on this machine; a window of twice that keeps the next jobs queued."""

    remote = False

    def __init__(self, workers: int, name: str = "swerl"):
        self.workers = workers
        self.window = 2 * workers
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Outcome]:
        return self._pool.submit(_local_job, fn, args)

    def share(self, obj: Any) -> Any:
        """An object many jobs take as an argument (sent once on a cluster; here, itself)."""
        return obj

    def on_every_node(self, fn: Callable[..., Any], /, *args: Any, timeout_s: float | None = None) -> list[Outcome]:
        """This machine is the only node."""
        return [Outcome(fn(*args), this_node())]

    def abort(self, pending: Iterable[Future[Any]], cleanup: Callable[[], Any] | None) -> None:
        """Drop queued jobs, remove this process's live sandboxes, wait for the workers, then `cleanup`."""
        from swerl_cli.sandbox import lifecycle

        for fut in pending:
            fut.cancel()
        lifecycle.sweep()
        self._pool.shutdown(wait=True, cancel_futures=True)
        lifecycle.sweep()
        if cleanup is not None:
            try:
                cleanup()
            except Exception:  # no engine (local backend) or engine gone: nothing to clean
                pass

    def close(self, stale_cleanup: Callable[[], Any] | None = None) -> None:
        """Wait for the workers; a dead job's sandboxes are already gone here (its thread removed them)."""
        self._pool.shutdown(wait=True)


def open_executor(
    ray: str | None,
    workers: int,
    placement: Placement | None = None,
    *,
    name: str = "swerl",
    setup: Callable[[], Any] | None = None,
) -> LocalExecutor | Any:
    """A RayExecutor connected to `ray` (an address, or `auto`), else a LocalExecutor; an unreachable cluster is a
    one-line ConfigError raised before the caller writes anything. `setup` runs on a worker before each job there
    (process-wide settings such as the image mirror, which this process already has)."""
    if not ray:
        return LocalExecutor(workers, name)
    from swerl_cli.executor.ray import RayExecutor

    return RayExecutor(ray, workers, placement or Placement(), setup=setup)


def ray_address(flag: str | None) -> str | None:
    """`--ray` if given, else SWERL_RAY_ADDRESS (empty means local)."""
    return flag or os.environ.get(RAY_ENV) or None


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
    pending: dict[Future[Outcome], K] = {}
    reader = _Reader(iter(jobs))
    asked: Future[Any] | None = reader.ask()
    clean = False
    try:
        while True:
            # Take what the reader has read while the window has room; a read still blocked (a pipe waiting for
            # its next line) never holds back the results of jobs already running.
            while asked is not None and asked.done() and len(pending) < executor.window:
                item = asked.result()  # a bad input line raises here
                asked = None if item is _END else reader.ask()
                if item is _END:
                    break
                key, fn, args = item
                if fn is None:  # a result known without running anything: passed through in stream order
                    yield key, Outcome(args, None)
                    continue
                pending[executor.submit(fn, *args)] = key
                if on_submit is not None:
                    on_submit(key)
            if not pending and asked is None:
                break
            waiting = set(pending)
            if asked is not None and len(pending) < executor.window:
                waiting.add(asked)
            done, _ = wait(waiting, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in done:
                if fut is asked:
                    continue
                key = pending.pop(fut)
                try:
                    outcome: Outcome | JobLostError = fut.result()
                except JobLostError as e:
                    outcome = e
                yield key, outcome
        clean = True
    finally:
        reader.stop()
        if clean:
            executor.close(stale_cleanup)
        else:
            with signals_held():
                executor.abort(list(pending), cleanup)


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
