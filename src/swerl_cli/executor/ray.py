"""RayExecutor: jobs as Ray tasks on the nodes of an existing cluster; the only swerl module that imports Ray.

Each job is one task with a resource request (`Placement`: CPUs and memory, so Ray packs nodes) that runs the job
function on a worker, which starts its sandbox on its own node's Docker engine. A task whose worker or node dies
is retried by Ray up to `max_retries` times on whichever node has room; after that the job's future fails with
`JobLostError`, which callers turn into an `error` record. Interrupts cancel every pending task (the task's
worker removes its sandboxes) and then run a cleanup on every live node.
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

import ray
from ray import exceptions as rex
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from swerl_cli.core.errors import ConfigError, JobLostError, SwerlError
from swerl_cli.executor.nodes import Placement, this_node
from swerl_cli.executor.stream import Outcome

CONNECT_TIMEOUT_S = 5.0
CANCEL_GRACE_S = 15.0
NODE_CALL_TIMEOUT_S = 120.0


def _remote_job(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, dict[str, Any]]:
    """Runs on a worker: the job (its arguments carry all it needs, the sandbox backend included), then where it
    ran. Cancelled or crashed: this worker's sandboxes go."""
    from swerl_cli.sandbox import lifecycle

    try:
        value = fn(*(ray.get(a) if isinstance(a, ray.ObjectRef) else a for a in args))
    except BaseException:
        lifecycle.sweep()
        raise
    return value, this_node(ray.get_runtime_context().get_node_id())


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _precheck(address: str) -> None:
    """Fail fast (seconds, not Ray's minute of retries) when nothing listens at host:port."""
    if address == "auto" or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"--ray: expected HOST:PORT of the cluster's head (or 'auto'); got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise ConfigError(f"cannot reach the Ray cluster at {address}: {e.strerror or e}") from None


def connect(address: str) -> bool:
    """Join the cluster at `address` (or `auto`); returns True when this call connected. One-line ConfigError."""
    if ray.is_initialized():
        return False
    if address.startswith("ray://"):
        raise ConfigError("--ray: Ray Client addresses (ray://) are not supported; give the head's HOST:PORT")
    _precheck(address)
    # Ray's core worker installs its own SIGTERM handler (log a stack, then abort): the driver's own handlers go back
    # so SIGTERM takes the same path as Ctrl-C (cancel remote work, clean every node, exit 128 + 15).
    main = threading.current_thread() is threading.main_thread()
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)} if main else {}
    try:
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False, include_dashboard=False)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as e:
        raise ConfigError(f"cannot reach the Ray cluster at {address}: {_first_line(e)}") from None
    finally:
        for sig, handler in saved.items():
            if handler is not None:
                signal.signal(sig, handler)
    return True


def alive_nodes() -> list[dict[str, Any]]:
    """The cluster's live nodes as `ray.nodes()` lists them."""
    return [n for n in ray.nodes() if n.get("Alive")]


class RayExecutor:
    """Jobs as Ray tasks; at most `workers` of this driver's jobs exist at once (`window`)."""

    remote = True

    def __init__(self, address: str, workers: int, placement: Placement):
        self.placement = placement
        self.window = workers
        self._owns = connect(address)
        self._check_fits()
        self._task = ray.remote(_remote_job)
        self._refs: dict[Future[Outcome], Any] = {}
        self._opts = dict(
            num_cpus=placement.cpus,
            memory=int(placement.memory_gb * 2**30),
            max_retries=placement.max_retries,
            retry_exceptions=False,
        )

    def _check_fits(self) -> None:
        """A request no node can satisfy would wait forever: say so now."""
        p, mem = self.placement, self.placement.memory_gb * 2**30
        nodes = alive_nodes()
        fits = [n for n in nodes if n["Resources"].get("CPU", 0) >= p.cpus and n["Resources"].get("memory", 0) >= mem]
        if not fits:
            have = ", ".join(
                f"{n['Resources'].get('CPU', 0):g} CPU/{n['Resources'].get('memory', 0) / 2**30:.1f} GiB" for n in nodes
            )
            raise ConfigError(
                f"no node of the Ray cluster fits one job ({p.cpus:g} CPU, {p.memory_gb:g} GiB; "
                f"nodes: {have or 'none'}); lower --episode-cpus / --episode-memory-gb"
            )

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Outcome]:
        """Start `fn(*args)` as a Ray task; the future resolves to Outcome(value, node)."""
        ref = self._task.options(**self._opts).remote(fn, args)
        fut: Future[Outcome] = Future()
        self._refs[fut] = ref
        ref.future().add_done_callback(lambda rf: self._settle(fut, rf))
        return fut

    def _settle(self, fut: Future[Outcome], rf: Future[Any]) -> None:
        self._refs.pop(fut, None)
        try:
            value, node = rf.result()
        except rex.TaskCancelledError:
            fut.set_exception(JobLostError("cancelled"))
        except rex.RayTaskError as e:  # the job itself raised: a SwerlError keeps its one line, a bug its traceback
            cause = getattr(e, "cause", None)
            fut.set_exception(cause if isinstance(cause, SwerlError) else e)
        except (rex.RayError, ConnectionError) as e:  # worker or node died, owner gone, object lost
            n = self.placement.max_retries
            fut.set_exception(JobLostError(f"job lost after {n} retr{'y' if n == 1 else 'ies'}: {_first_line(e)}"))
        except BaseException as e:  # anything else still settles the future, never hangs it
            fut.set_exception(e)
        else:
            fut.set_result(Outcome(value, node))

    def share(self, obj: Any) -> Any:
        """Put `obj` in the object store once; jobs given the ref receive the object."""
        return ray.put(obj)

    def on_every_node(
        self, fn: Callable[..., Any], /, *args: Any, timeout_s: float | None = NODE_CALL_TIMEOUT_S
    ) -> list[Outcome]:
        """Run `fn(*args)` once on each live node (0 CPU, pinned); a node that dies meanwhile is left out, and so
        is one that has not answered within `timeout_s` (None: wait)."""
        refs = []
        for node in alive_nodes():
            strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
            opts = dict(num_cpus=0, memory=0, max_retries=0, scheduling_strategy=strategy)
            refs.append(self._task.options(**opts).remote(fn, args))
        out = []
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        for ref in ready:
            try:
                value, node = ray.get(ref)
            except rex.RayError:
                continue
            out.append(Outcome(value, node))
        return out

    def abort(self, pending: Iterable[Future[Any]], cleanup: Callable[[], Any] | None) -> None:
        """Cancel pending jobs (their workers remove their sandboxes), force what lingers, clean every node."""
        refs = [self._refs[f] for f in pending if f in self._refs]
        for ref in refs:
            ray.cancel(ref)
        if refs:
            _, lingering = ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE_S, fetch_local=False)
            for ref in lingering:
                ray.cancel(ref, force=True)  # kills the worker: its sandboxes become stale (owner gone)
            if lingering:
                ray.wait(lingering, num_returns=len(lingering), timeout=CANCEL_GRACE_S, fetch_local=False)
        if cleanup is not None:
            self.on_every_node(cleanup)
        self.close()

    def close(self, stale_cleanup: Callable[[], Any] | None = None) -> None:
        """Run `stale_cleanup` on every node (a lost job's worker died with its sandboxes), then disconnect."""
        if stale_cleanup is not None and ray.is_initialized():
            self.on_every_node(stale_cleanup)
        if self._owns and ray.is_initialized():
            ray.shutdown()
