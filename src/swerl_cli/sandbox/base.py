"""The Sandbox protocol: a stateful place to run an episode's commands (docs/sandbox.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from swerl_cli.core.errors import SandboxError

if TYPE_CHECKING:
    from swerl_cli.streams.records import Task


@dataclass(frozen=True, slots=True)
class ExecResult:
    """Outcome of one command: exact exit code and (possibly capped) combined output."""

    exit_code: int
    output: str
    timed_out: bool = False
    duration_s: float = 0.0


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Resource limits for one sandbox."""

    memory_mb: int = 4096
    cpus: float = 1.0
    pids: int = 512
    network: bool = False
    user: str | None = None
    output_cap_bytes: int = 100_000


@runtime_checkable
class Sandbox(Protocol):
    """A session started from a task; commands share one shell (cwd and env persist between them).

    `workdir` is the repository's path inside the sandbox. `run` caps its output (head and tail kept) at the
    sandbox's `output_cap_bytes`, or at `cap` bytes; `run_uncapped` returns all of it (test logs, file contents).
    """

    workdir: str

    def run(self, cmd: str, timeout_s: float = 60.0, *, cap: int | None = None) -> ExecResult: ...

    def run_uncapped(self, cmd: str, timeout_s: float = 60.0) -> ExecResult: ...

    def write_file(self, path: str, data: str | bytes) -> None: ...

    def read_file(self, path: str) -> bytes: ...

    def diff(self) -> str: ...

    def close(self) -> None: ...


class SandboxBackend:
    """One kind of sandbox, registered by short name in `swerl_cli.sandbox.BACKENDS` (docs/architecture.md).

    A backend owns its typed `Options` (a frozen `core.plugins.Options` dataclass whose fields are read by name from
    a command's settings: `Options.from_options(**settings)`), starts sandboxes, and removes the ones a run left
    behind. A command builds it once (`swerl_cli.sandbox.create`, which the registry's `create(options)` serves) and
    passes the object; it is picklable, so a cluster's workers get the same one. `log` (where image pulls are
    reported) stays in the process that set it. `uses_images` says whether tasks' `image` fields reach an engine
    (checked per row, pulled ahead by collect). `isolated` says that a sandbox's processes are its own (a
    container's PID namespace), so grading may kill every process in it after the tests; False (the default) for
    anything that runs on the host.
    """

    name = ""
    uses_images = True
    isolated = False
    Options: type[Any]

    def __init__(self, options: Any = None, log: Callable[[str], None] | None = None):
        self.options = options if options is not None else self.Options.from_options()
        self.log = log

    @classmethod
    def create(cls, options: Any) -> SandboxBackend:
        """The backend of these options (what `Registry.create` calls)."""
        return cls(options)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "log": None}  # a console or a progress bar stays where it was set

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def check_ready(self) -> None:
        """ConfigError when this configuration cannot start any sandbox (a required option missing): a command
        checks it once, before its first episode, instead of writing the same error for every record."""

    def unavailable(self) -> str | None:
        """Why no sandbox of this backend can start on this machine (its engine does not answer), or None."""
        return None

    def start(
        self, task: Task, limits: SandboxLimits | None, run_id: str | None, env: dict[str, str] | None
    ) -> Sandbox:
        """A started sandbox for `task` (the caller closes it); SandboxError when it cannot be had."""
        raise NotImplementedError

    def prune(self, run_id: str | None = None, *, stale_only: bool = False) -> list[str]:
        """Remove this backend's leftover sandboxes (all, or one run's; with `stale_only` only those whose owning
        process is gone); returns their names."""
        return []

    def remove_stale(self, run_id: str) -> int:
        """Remove `run_id`'s sandboxes whose owning process is gone (a run killed with SIGKILL cannot clean up; the
        next run with the same id does it). Returns the count; no engine means nothing to do."""
        try:
            return len(self.prune(run_id, stale_only=True))
        except SandboxError:
            return 0

    def resolve_image(self, image: str) -> str:
        """The reference a sandbox start of this backend uses for a task's `image` (a mirror's, if configured)."""
        return image

    def ensure_image(self, image: str) -> str:
        """Make `image` available to this backend ('present' or 'pulled'); backends without images do nothing."""
        return "present"
