"""Sandboxes: the protocol (base.py), the backend registry (docker, podman, local), and `open_sandbox`."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec

from swerl_cli.core.errors import ConfigError, SandboxError
from swerl_cli.core.plugins import Registry
from swerl_cli.sandbox.base import ExecResult, Sandbox, SandboxBackend, SandboxLimits
from swerl_cli.streams.records import Task

# The only registry of sandbox backends: short name -> "module:Class" (a SandboxBackend). Nothing outside a
# backend's module names it; a plugin or a test adds one with `register_backend`.
BACKENDS = Registry(
    {
        "docker": "swerl_cli.sandbox.engine:DockerBackend",
        "podman": "swerl_cli.sandbox.podman:PodmanBackend",
        "local": "swerl_cli.sandbox.local:LocalBackend",
    },
    unknown="unknown sandbox backend {name!r}; choose one of {choices}",
)
register_backend = BACKENDS.register  # add (or replace) a backend as `"module:Class"`
DEFAULT_BACKEND = "docker"  # the default of the commands' --sandbox flag
P = ParamSpec("P")

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "ExecResult",
    "Sandbox",
    "SandboxBackend",
    "SandboxLimits",
    "backend_class",
    "choices",
    "create",
    "engine_client",
    "from_config",
    "one_of",
    "open_sandbox",
    "register_backend",
    "run_cleanup",
    "start_sandbox",
]


def choices() -> list[str]:
    """The registered backends, in registration order (the built-in ones first)."""
    return BACKENDS.choices()


def one_of(names: list[str] | None = None) -> str:
    """`names` (default: every registered backend) as help text reads them: "docker, podman or local"."""
    names = choices() if names is None else names
    return " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def backend_class(name: str) -> type[SandboxBackend]:
    """The class registered as `name` (for its class facts: `uses_images`, `isolated`); ConfigError naming the
    choices otherwise."""
    cls: type[SandboxBackend] = BACKENDS.cls(name)
    return cls


def create(name: str, *, log: Callable[[str], None] | None = None, **options: Any) -> SandboxBackend:
    """The backend `name`, built from its own `Options` read by name from `options` (a command's settings: other
    names and None values are ignored). A command builds it once and passes the object; `log` reports its image
    pulls and evictions."""
    backend: SandboxBackend = BACKENDS.create(name, **options)
    backend.log = log
    return backend


def from_config(cfg: Any) -> SandboxBackend:
    """The backend a command's config names (`cfg.sandbox`), built from the config's fields of its options' names
    and its `--sandbox-option KEY=VALUE` items (sandbox/options.py), and checked ready (ConfigError naming the
    field when it cannot start any sandbox)."""
    from swerl_cli.sandbox.options import settings

    backend = create(cfg.sandbox, **settings(cfg, backend_class(cfg.sandbox).Options))
    backend.check_ready()
    return backend


def engine_client(backend: SandboxBackend) -> Any:
    """The SDK client of an image-using backend's engine (docker, podman); ConfigError for one without images."""
    if not backend.uses_images or not hasattr(backend, "client"):
        images = [n for n in BACKENDS if backend_class(n).uses_images]
        raise ConfigError(f"sandbox backend {backend.name!r} has no images; choose one of {', '.join(images)}")
    return backend.client()


def run_cleanup(run_id: str, backend: SandboxBackend, stale_only: bool = False) -> Callable[[], list[str]]:
    """What every node runs after an interrupt (remove the sandboxes of this run), or with `stale_only` after a run
    (only those whose owning process is gone): the prune of the backend the run uses, as a picklable call."""
    return functools.partial(backend.prune, run_id, stale_only=stale_only)


def start_sandbox(
    task: Task,
    backend: SandboxBackend,
    *,
    limits: SandboxLimits | None = None,
    run_id: str | None = None,
    hygiene: bool = True,
    env: dict[str, str] | None = None,
) -> Sandbox:
    """Start a sandbox of `backend` for `task` (caller must `close()` it); with `hygiene` the repo holds nothing past
    base_commit."""
    sb = backend.start(task, limits, run_id, env)
    try:
        if task.base_commit == BUG_BASE and task.extra.get("bug_patch"):
            commit_bug(sb, task)
        if hygiene:
            enforce_hygiene(sb, sb.task if hasattr(sb, "task") else task)
    except BaseException:
        sb.close()
        raise
    return sb


# A SWE-smith task names no commit: its bug is applied to the image's HEAD and committed (as a root commit) at every
# sandbox start, episode and grading alike; the sandbox then treats that commit as base_commit.
BUG_BASE = "HEAD"
_BUG_FILE = "/tmp/swerl-bug.patch"


def commit_bug(sb: Sandbox, task: Task) -> None:
    """Apply the task's `bug_patch` in the work tree, commit it, and make the commit the sandbox's base_commit."""
    from dataclasses import replace

    sb.write_file(_BUG_FILE, str(task.extra["bug_patch"]))
    ident = "-c user.name=swerl -c user.email=swerl@localhost -c commit.gpgsign=false"
    # A root commit (no parent): the history must not hold the code before the bug, or `git show` would give the
    # fix away; hygiene then drops every older object.
    res = sb.run(
        f"cd {_q(sb.workdir)} && {{ git update-index -q --refresh >/dev/null || true; }} && "
        f"git apply --index {_BUG_FILE} && rm -f {_BUG_FILE} && "
        f"c=$(git {ident} commit-tree $(git write-tree) -m 'swerl: task state') && git update-ref HEAD $c && "
        "git rev-parse HEAD",
        300,
    )
    if res.exit_code != 0:
        raise SandboxError(
            f"{task.instance_id}: bug_patch does not apply to the image's HEAD: {res.output.strip()[-300:]}"
        )
    if hasattr(sb, "task"):
        sb.task = replace(task, base_commit=res.output.strip().splitlines()[-1])


def enforce_hygiene(sb: Sandbox, task: Task) -> None:
    """Run the git-hygiene step in the sandbox's workdir; a failure is a SandboxError naming the task."""
    from swerl_cli.sandbox.gitops import hygiene_command

    res = sb.run(f"cd {_q(sb.workdir)} && {hygiene_command(task.base_commit)}", 600)
    if res.exit_code != 0:
        raise SandboxError(f"{task.instance_id}: repository hygiene failed: {res.output.strip()[-300:]}")


def _closing(start: Callable[P, Sandbox]) -> Callable[P, contextlib.AbstractContextManager[Sandbox]]:
    """`start` as a context manager: the sandbox it starts is closed (removed) on every exit path."""

    @contextlib.contextmanager
    def opened(*args: P.args, **kwargs: P.kwargs) -> Iterator[Sandbox]:
        sb = start(*args, **kwargs)
        try:
            yield sb
        finally:
            sb.close()

    return opened


# Context manager yielding a started sandbox in task.workdir (start_sandbox's arguments); removed on every exit path.
open_sandbox = _closing(start_sandbox)


def _q(s: str) -> str:
    import shlex

    return shlex.quote(s)
