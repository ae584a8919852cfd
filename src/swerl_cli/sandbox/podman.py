"""The `podman` sandbox backend: the docker backend driven through podman's Docker-compatible REST API.

Podman has no daemon of its own; `podman system service --time=0 unix://SOCKET` serves the Docker API on a socket
(rootful: /run/podman/podman.sock; rootless: $XDG_RUNTIME_DIR/podman/podman.sock). The same docker SDK calls
drive it (create, attach, exec, events, labels, limits, pull); docs/sandbox.md lists what differs and why.
Images live in podman's own store: a short name such as `swerl-base` is found as `localhost/swerl-base`.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from typing import Any

from swerl_cli.core.errors import SandboxError
from swerl_cli.sandbox.engine import DockerBackend, DockerOptions

# Podman sets its own RLIMIT_NPROC to this when it starts (seen on 4.3.1), and its containers get 1048576 for
# nproc and nofile unless told otherwise; where the host withholds CAP_SYS_RESOURCE (a nested machine) the runtime
# cannot raise a limit that high and every start fails ("error setting rlimit ... operation not permitted").
PODMAN_NPROC = 32768


def default_url() -> str:
    """The podman socket: $SWERL_PODMAN_URL, else $CONTAINER_HOST, else rootful's or this user's default path."""
    for var in ("SWERL_PODMAN_URL", "CONTAINER_HOST"):
        if os.environ.get(var):
            return os.environ[var]
    if os.geteuid() == 0:
        return "unix:///run/podman/podman.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.geteuid()}"
    return f"unix://{runtime}/podman/podman.sock"


@dataclass(frozen=True, slots=True)
class PodmanOptions(DockerOptions):
    """The docker backend's options (mirror, pulls, image budget), where podman's API socket is, and the file and
    process limits its containers get."""

    engine_url: str | None = ""
    nofile: int = 0
    nproc: int = PODMAN_NPROC
    allow_no_limits: bool = False

    @classmethod
    def from_options(cls, **options: Any) -> PodmanOptions:
        """The options given (a command's settings, by name), the rest from the environment: the socket (see
        `default_url`), nofile (this process's own soft limit), and SWERL_PODMAN_NO_LIMITS=1, which accepts rootless
        podman on cgroups v1 (it cannot enforce limits)."""
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        nofile = soft if soft != resource.RLIM_INFINITY else 1 << 20
        allow = os.environ.get("SWERL_PODMAN_NO_LIMITS", "") in ("1", "true", "yes")
        env: dict[str, Any] = {"engine_url": default_url(), "nofile": nofile, "allow_no_limits": allow}
        given = {k: v for k, v in options.items() if v is not None}
        # super() with its arguments: a slots dataclass is a new class, which the no-argument form does not know
        return super(PodmanOptions, cls).from_options(**{**env, **given})


class PodmanBackend(DockerBackend):
    """Sandboxes as podman containers (`--sandbox podman`), rootful or rootless, through podman's socket."""

    name = "podman"
    engine = "podman"
    Options = PodmanOptions

    def client(self) -> Any:
        """The client of podman's socket, once checked that the engine enforces the sandbox's limits."""
        client = super().client()
        if not self.options.allow_no_limits:
            check_limits(client, str(self.options.engine_url))
        return client

    def host_options(self) -> dict[str, Any]:
        """Limits the runtime can set without CAP_SYS_RESOURCE (podman's defaults need it)."""
        import docker

        cfg = self.options
        return {
            "ulimits": [
                docker.types.Ulimit(name="nofile", soft=cfg.nofile, hard=cfg.nofile),
                docker.types.Ulimit(name="nproc", soft=cfg.nproc, hard=cfg.nproc),
            ]
        }

    def events(self) -> Any:
        """podman 4.3 reads `since`/`until` as RFC 3339 or durations (Docker: Unix times), and with `until` in the
        past returns nothing: ask with an RFC 3339 `since` and its own `stream=false` (the events so far)."""
        return podman_events


_checked: set[str] = set()


def check_limits(client: Any, url: str) -> None:
    """SandboxError when podman runs rootless on cgroups v1: it then ignores memory, CPU and pids limits (its log
    says so, the API does not), and an agent's command could take the whole machine."""
    if url in _checked:
        return
    api = client.api
    try:
        res = api._get(api._url("/libpod/info"), timeout=30)
        api._raise_for_status(res)
        host = res.json()["host"]
        rootless, cgroups = bool(host["security"]["rootless"]), str(host["cgroupVersion"])
    except Exception as e:  # not podman's API, or a version without the field
        raise SandboxError(f"could not ask podman at {url} how it runs ({str(e).splitlines()[0]})") from None
    if rootless and cgroups == "v1":
        raise SandboxError(
            f"podman at {url} is rootless on cgroups v1, where it ignores memory, CPU and pids limits; use cgroups v2 "
            "(docs/sandbox.md) or rootful podman, or set SWERL_PODMAN_NO_LIMITS=1 to run sandboxes without limits"
        )
    _checked.add(url)


def podman_events(api: Any, cid: str, since: float, until: float) -> list[dict[str, Any]]:
    """podman's `kill` and `oom` events of container `cid` since `since` (a Unix time; `until` is now)."""
    import datetime
    import json

    start = datetime.datetime.fromtimestamp(since, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    filters = json.dumps({"container": [cid], "event": ["kill", "oom"]})
    res = api._get(api._url("/events"), params={"since": start, "stream": "false", "filters": filters}, timeout=30)
    api._raise_for_status(res)
    return [json.loads(line) for line in res.text.splitlines() if line.strip()]
