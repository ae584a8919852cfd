"""DockerSandbox: one container per episode from `task.image`, driven through one persistent framed bash."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from swerl_cli.core.errors import SandboxError, first_line
from swerl_cli.sandbox import lifecycle
from swerl_cli.sandbox.base import SandboxLimits
from swerl_cli.sandbox.engine_socket import DEFAULT_SOCKET, refused
from swerl_cli.sandbox.shell import Shell, ShellSandbox
from swerl_cli.streams.records import Task

_client_lock = threading.Lock()
_client: Any = None  # the DOCKER_HOST engine's client
_clients: dict[str, Any] = {}  # other engines' (podman's socket), by base URL


def docker_client(base_url: str | None = None, engine: str = "Docker") -> Any:
    """A shared docker SDK client of the engine at `base_url` (default: DOCKER_HOST's); one-line SandboxError when
    no engine answers there."""
    global _client
    with _client_lock:
        client = _clients.get(base_url) if base_url else _client
        if client is None:
            import docker

            if (down := refused(base_url or os.environ.get("DOCKER_HOST") or DEFAULT_SOCKET)) is not None:
                where = f" at {base_url}" if base_url else ""
                raise SandboxError(f"no {engine} engine reachable{where} ({down}); start one or use --sandbox local")
            try:
                # no version given: the client asks the engine for it (GET /version), which also proves it answers
                if base_url:
                    client = _clients[base_url] = docker.DockerClient(base_url, timeout=120, max_pool_size=128)
                else:
                    client = _client = docker.from_env(timeout=120, max_pool_size=128)
            except Exception as e:  # any failure here means "no usable engine"
                where = f" at {base_url}" if base_url else ""
                raise SandboxError(
                    f"no {engine} engine reachable{where} ({e}); start one or use --sandbox local"
                ) from None
        return client


Events = Callable[[Any, str, float, float], Iterable[dict[str, Any]]]


def docker_events(api: Any, cid: str, since: float, until: float) -> Iterable[dict[str, Any]]:
    """The engine's `kill` and `oom` events of container `cid` between two Unix times."""
    window = {"since": f"{since:.6f}", "until": f"{until:.6f}"}
    return api.events(**window, filters={"container": cid, "event": ["kill", "oom"]}, decode=True)


class _AttachTransport:
    """The container's main process is the shell (bash under tini); its stdin and output are the attach stream.

    No `docker exec` is needed to reach it, which saves a runtime exec per sandbox. The stream is multiplexed like
    a non-tty exec socket (8-byte frame headers), demultiplexed here into plain bytes. When the shell exits, the
    container stops; `restart_shell` starts it again (files persist, processes do not).
    """

    def __init__(self, client: Any, container_id: str, events: Events | None = None):
        self.client, self.cid = client, container_id
        self.events = events or docker_events
        self.started = 0.0
        self._frames = bytearray()
        self._attach()

    def _attach(self) -> None:
        params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        self.sock = self.client.api.attach_socket(self.cid, params=params)
        self.raw: socket.socket = self.sock._sock
        self._frames.clear()

    def send(self, data: bytes) -> None:
        try:
            self.raw.sendall(data)
        except OSError as e:  # podman closes the attach stream of a container killed between two commands
            outside = self._stopped_from_outside()
            if outside:
                raise SandboxError(f"sandbox container was stopped from outside ({outside})") from None
            raise SandboxError(f"sandbox shell is gone: {e}") from None

    def recv(self, timeout_s: float) -> bytes | None:
        out = bytearray()
        while True:
            while len(self._frames) >= 8:  # 8-byte header: stream, 0, 0, 0, big-endian payload size
                size = int.from_bytes(self._frames[4:8], "big")
                if len(self._frames) < 8 + size:
                    break
                out += self._frames[8 : 8 + size]
                del self._frames[: 8 + size]
            if out:
                return bytes(out)
            ready, _, _ = select.select([self.raw], [], [], timeout_s)
            if not ready:
                return None
            try:
                chunk = self.raw.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                return b""
            self._frames += chunk
            timeout_s = 0.0

    def kill_children(self, shell_pid: int, sig: str) -> None:
        # Each direct child of the shell leads its own process group (set -m): signal the groups. The exec runs as
        # the container's user: a root exec has no CAP_KILL over an unprivileged shell's processes.
        script = f"kill -USR1 {shell_pid}; for p in $(pgrep -P {shell_pid}); do kill -{sig} -- -$p $p; done 2>/dev/null"
        script += "; true"
        try:
            self.client.api.exec_start(self.client.api.exec_create(self.cid, ["bash", "-c", script])["Id"])
        except Exception as e:
            raise SandboxError(f"could not interrupt the command: {e}") from None

    def start(self) -> None:
        """Start the (attached) container; the time is kept to tell later who stopped it."""
        self.started = time.time()
        self.client.api.start(self.cid)

    def restart_shell(self) -> int | None:
        """The shell exited (the container stopped with its code) or is stuck (killed here): start it again.

        A container stopped from outside (`docker kill`/`stop`, the OOM killer) is an infrastructure failure, not
        something the agent did: that raises SandboxError (the episode becomes an `error` record) instead.
        """
        self.close()
        api = self.client.api
        try:
            try:
                code = api.wait(self.cid, timeout=2)["StatusCode"]
            except Exception:  # still running: a stuck shell
                with contextlib.suppress(Exception):
                    api.kill(self.cid)
                code = None
                api.wait(self.cid, timeout=30)
        except Exception as e:  # the container itself is gone
            raise SandboxError(f"sandbox container is gone: {e}") from None
        outside = self._stopped_from_outside() if code is not None else None
        if outside:
            raise SandboxError(f"sandbox container was stopped from outside ({outside}, exit {code})")
        try:
            self._attach()
            self.start()
        except Exception as e:
            raise SandboxError(f"sandbox container is gone: {e}") from None
        return code

    def _stopped_from_outside(self) -> str | None:
        """'killed (signal N)' or 'out of memory' when the engine logged a kill or an OOM since the last start."""
        try:
            for ev in self.events(self.client.api, self.cid, self.started, time.time() + 0.001):
                if ev.get("status") == "oom":
                    return "out of memory"
                signal = ev.get("Actor", {}).get("Attributes", {}).get("signal")  # podman 4.3 names none
                return f"killed, signal {signal}" if signal else "killed"
        except Exception:  # no event log: trust the exit code, as before
            return None
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.raw.close()
        with contextlib.suppress(Exception):
            self.sock.close()


# What a root episode keeps of Docker's default capabilities: owning and changing files of other users (package
# installs, tests that chmod/chown) and signalling its processes. Gone: NET_RAW, MKNOD, SYS_CHROOT, SETPCAP,
# SETFCAP, AUDIT_WRITE, NET_BIND_SERVICE. A non-root episode user keeps none; no-new-privileges blocks setuid.
ROOT_CAPS = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID")
_image_users: dict[str, str] = {}


def image_user(client: Any, image: str) -> str:
    """The image's configured USER ('' = root), cached per image name; '' when the image cannot be inspected
    (creating the container then reports the real problem)."""
    if image not in _image_users:
        try:
            _image_users[image] = client.api.inspect_image(image)["Config"].get("User") or ""
        except Exception:  # a missing image is reported by create_container with its own message
            return ""
    return _image_users[image]


def _name(run_id: str, instance_id: str) -> str:
    slug = re.sub(r"[^a-zA-Z0-9_.-]+", "-", f"{run_id}.{instance_id}")[:80].strip("-.") or "x"
    return f"swerl-{slug}-{secrets.token_hex(3)}"


def _host_config(
    client: Any, image: str, lim: SandboxLimits, user: str | None, host_options: dict[str, Any] | None
) -> Any:
    """The container's limits: memory (no swap beyond it), CPUs, pids, no network unless asked, every capability
    dropped (a root shell keeps the few ROOT_CAPS it needs), no new privileges; then the backend's own options."""
    as_root = (user or image_user(client, image)).split(":")[0] in ("", "root", "0")
    return client.api.create_host_config(
        init=True,
        mem_limit=f"{lim.memory_mb}m",
        memswap_limit=f"{lim.memory_mb}m",
        nano_cpus=int(lim.cpus * 1e9),
        pids_limit=lim.pids,
        network_mode="bridge" if lim.network else "none",
        cap_drop=["ALL"],
        cap_add=list(ROOT_CAPS) if as_root else None,
        security_opt=["no-new-privileges"],
        **(host_options or {}),
    )


class DockerSandbox(ShellSandbox):
    """A started container whose main process is a persistent shell in `task.workdir`; `close()` removes it."""

    def __init__(
        self,
        task: Task,
        limits: SandboxLimits | None = None,
        run_id: str | None = None,
        env: dict[str, str] | None = None,
        *,
        client: Any = None,
        host_options: dict[str, Any] | None = None,
        events: Events | None = None,
    ):
        self.task = task
        self.workdir = task.workdir
        self.limits = limits or SandboxLimits()
        self.run_id = run_id or "adhoc"
        self.cid: str | None = None
        self._transport: _AttachTransport | None = None
        self._shell: Shell | None = None
        self._closed = False
        self.client = client = client or docker_client()
        user = self.limits.user or None  # None: the image's own USER (swerl-built images: the unprivileged `swerl`)
        host_config = _host_config(client, task.image, self.limits, user, host_options)
        lifecycle.register(id(self), self.close)
        try:
            self.cid = client.api.create_container(
                task.image,
                command=["bash", "--noprofile", "--norc"],
                stdin_open=True,
                tty=False,
                labels=lifecycle.run_labels(self.run_id, task.instance_id),
                name=_name(self.run_id, task.instance_id),
                working_dir=task.workdir,
                environment=env or {},
                user=user,
                host_config=host_config,
            )["Id"]
            self._transport = _AttachTransport(client, self.cid, events)  # attached before start: no output is missed
            self._transport.start()
            if self._closed:  # swept (Ctrl-C, SIGTERM) while the container was being created
                self._remove()
                raise SandboxError("sandbox start interrupted")
            self._shell = Shell(self._transport, self.limits.output_cap_bytes)
        except SandboxError:
            self.close()
            raise
        except Exception as e:  # docker.errors.* and socket errors become one line
            self.close()
            msg = first_line(e)
            raise SandboxError(f"could not start sandbox from image {task.image!r}: {msg}") from None

    @property
    def container(self) -> Any:
        """The docker SDK Container (inspected on access; the hot path uses the low-level API and `cid`)."""
        return self.client.containers.get(self.cid)

    def _remove(self) -> None:
        if self._transport is not None:
            self._transport.close()
        if self.cid is not None:
            # podman 4.3 refuses a forced removal when the container exits while it kills it ("could not be
            # stopped: ... container state improper"); by the next try the container has stopped and goes.
            for attempt in range(5):
                try:
                    self.client.api.remove_container(self.cid, force=True)
                    return
                except Exception as e:  # docker.errors.NotFound: gone already
                    if getattr(getattr(e, "response", None), "status_code", None) == 404:
                        return
                    time.sleep(0.1 * (attempt + 1))
