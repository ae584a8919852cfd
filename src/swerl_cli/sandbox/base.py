"""The Sandbox protocol: a stateful place to run an episode's commands (docs/sandbox.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


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
