"""The SwerlError tree. The library raises these; only `cli._common.boundary` turns them into exit codes."""

from __future__ import annotations

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_INTERRUPTED = 130


class SwerlError(Exception):
    """Base class: a failure the user can act on, reported as one line."""

    exit_code = EXIT_RUNTIME


class InputError(SwerlError):
    """Bad input data: names the source, the line and the field when known."""

    exit_code = EXIT_INPUT

    def __init__(self, source: str | None, line: int | None, field: str | None, message: str):
        self.source, self.line, self.field, self.message = source, line, field, message
        where = source or "<input>"
        if line is not None:
            where = f"{where}:{line}"
        what = f"field '{field}': {message}" if field else message
        super().__init__(f"{where}: {what}")


class ConfigError(SwerlError):
    """Bad configuration (file or flags); the message says how to fix it."""

    exit_code = EXIT_INPUT


class SandboxError(SwerlError):
    """A sandbox could not be started, used or removed."""


class PolicyError(SwerlError):
    """The policy backend failed (server down, bad response, model not loadable)."""


class NotImplementedYetError(SwerlError):
    """A command whose implementation has not landed yet."""
