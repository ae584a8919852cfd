"""The SwerlError tree. The library raises these; only `cli._common.boundary` turns them into exit codes."""

from __future__ import annotations

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_ROWS_FAILED = 4  # the run finished, but some rows were refused; each has an error record naming it
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


class UsageError(SwerlError):
    """Bad flags or flag combinations (exit 2, like typer's own usage errors)."""

    exit_code = EXIT_USAGE


class OutputError(SwerlError):
    """The output cannot be written: locked by another run, full disk, read-only directory, missing permission."""


class ConfigError(SwerlError):
    """Bad configuration (file or flags); the message says how to fix it."""

    exit_code = EXIT_INPUT


class RowsFailedError(SwerlError):
    """Raised after a run that finished: some input rows had a field docker or git would refuse (a bad image
    reference, workdir, base_commit, setup or repo_source) and each got its own error record; the others ran."""

    exit_code = EXIT_ROWS_FAILED

    def __init__(
        self, failed: int, total: int, first: str, what: str = "records are errors of input rows with a bad field"
    ):
        super().__init__(f"{failed} of {total} {what} (first: {first})")


class SandboxError(SwerlError):
    """A sandbox could not be started, used or removed."""


class PolicyError(SwerlError):
    """The policy backend failed (server down, bad response, model not loadable)."""


# Optional dependencies: top-level module -> the install command that provides it. A command that needs one of
# them and finds it missing reports this one line (cli._common.boundary), not an ImportError traceback.
OPTIONAL_DEPENDENCIES = {
    **dict.fromkeys(
        ("torch", "transformers", "tokenizers", "accelerate", "safetensors", "deepspeed", "numpy"),
        "pip install 'swerl-cli[train]'",
    ),
    "matplotlib": "pip install 'swerl-cli[plot]'",
    "pyarrow": "pip install 'swerl-cli[parquet]'",
    "vllm": "pip install 'swerl-cli[vllm]'",
    "ray": "pip install 'swerl-cli[ray]'",
    "wandb": "pip install wandb",
    "tensorboard": "pip install tensorboard",
}


def first_line(err: BaseException) -> str:
    """The first line of an exception's message, or its type's name when it has none: what a one-line error quotes
    of a library's exception.

    >>> first_line(OSError("no such file\\nTraceback ...")), first_line(TimeoutError())
    ('no such file', 'TimeoutError')
    """
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


class MissingDependencyError(SwerlError):
    """An optional package the command needs is not installed; the message carries the install command."""


def missing_dependency(err: ModuleNotFoundError) -> MissingDependencyError | None:
    """The one-line error for a known optional package that is not installed, or None (then it is a bug).

    >>> str(missing_dependency(ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")))
    "this needs matplotlib, which is not installed: pip install 'swerl-cli[plot]'"
    """
    import importlib.util

    top = (err.name or "").split(".")[0]
    install = OPTIONAL_DEPENDENCIES.get(top)
    if install is None or (top != err.name and importlib.util.find_spec(top) is not None):
        return None  # not optional, or installed but lacking a submodule (a version mismatch, not a missing package)
    return MissingDependencyError(f"this needs {top}, which is not installed: {install}")


def require_modules(*names: str) -> None:
    """Import optional packages up front, so a missing one fails before any work with its install command."""
    import importlib

    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            missing = missing_dependency(e)
            if missing is None:
                raise
            raise missing from None


class JobLostError(SwerlError):
    """A job's worker or node was lost (after the executor's retries), or the job was cancelled: an `error`
    record, never a reward."""
