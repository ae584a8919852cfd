"""Job executors: where `grade`, `tasks validate`, `tasks pull` and `collect --ray` run their jobs (docs/scale.md).

A job is a plain picklable function call, `fn(*args)`, that starts its own sandbox and returns a JSON-ready value.
An executor runs jobs and hands back `concurrent.futures.Future`s that resolve to `Outcome(value, node)`:

- `LocalExecutor`: a thread pool on this machine's Docker engine (the default);
- `RayExecutor` (`executor/ray.py`, the only module that imports Ray): each job is a Ray task on some node of a
  cluster, with a resource request per job, retried on another node when its node is lost.

`stream_jobs` (`executor/stream.py`) keeps a bounded window of jobs in flight and yields results as they finish;
on an interrupt or failure it cancels what is pending and runs the caller's cleanup on every node.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from swerl_cli.core.config import flag
from swerl_cli.executor.nodes import Placement as Placement  # the API of this package, as below
from swerl_cli.executor.nodes import node_label as node_label
from swerl_cli.executor.nodes import this_node as this_node
from swerl_cli.executor.stream import Outcome as Outcome
from swerl_cli.executor.stream import stream_jobs as stream_jobs  # the API of this package
from swerl_cli.sandbox.images import IMAGE_BUDGET_FLAG, REGISTRY_FLAG

RAY_ENV = "SWERL_RAY_ADDRESS"


@dataclass(frozen=True, slots=True)
class JobSettings:
    """The fields every command that runs sandbox jobs shares (collect, grade): where task images come from, any
    other option of the sandbox backend, and what each job asks of a Ray cluster. Configs extend it; flags are the
    kebab-case twins of the fields."""

    registry: str | None = flag(None, REGISTRY_FLAG)
    pull: bool = flag(
        True, "Pull a task's missing image (default) or fail naming the fetch command.", names=("--pull/--no-pull",)
    )
    image_budget_gb: float | None = flag(None, IMAGE_BUDGET_FLAG)
    sandbox_option: tuple[str, ...] = flag(
        (),
        "An option of the --sandbox backend without a flag of its own, as KEY=VALUE (repeatable); a key the "
        "backend lacks is an error naming its options.",
        metavar="KEY=VALUE",
    )
    ray: str | None = flag(  # jobs run on the nodes of this cluster
        None,
        "Run jobs on the Ray cluster at HOST:PORT ('auto': the cluster this machine belongs to); default: "
        "$SWERL_RAY_ADDRESS, else this machine.",
        metavar="ADDRESS",
    )
    # Ray's resource request per job (paper: 0.5 CPU, 2 GiB per agent)
    episode_cpus: float = flag(0.5, "With --ray: CPUs Ray reserves per job.", metavar="N")
    episode_memory_gb: float = flag(2.0, "With --ray: memory Ray reserves per job.", metavar="GB")
    max_episode_retries: int = flag(
        2, "With --ray: reruns of a job whose node or worker died, then an error record.", metavar="N"
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
) -> LocalExecutor | Any:
    """A RayExecutor connected to `ray` (an address, or `auto`), else a LocalExecutor; an unreachable cluster is a
    one-line ConfigError raised before the caller writes anything. A job's arguments carry everything it needs (the
    config with its sandbox backend): nothing is set up on a worker beforehand."""
    if not ray:
        return LocalExecutor(workers, name)
    from swerl_cli.executor.ray import RayExecutor

    return RayExecutor(ray, workers, placement or Placement())


def ray_address(flag: str | None) -> str | None:
    """`--ray` if given, else SWERL_RAY_ADDRESS (empty means local)."""
    return flag or os.environ.get(RAY_ENV) or None
