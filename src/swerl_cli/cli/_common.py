"""Shared CLI pieces: option types, the stderr console and the error boundary."""

from __future__ import annotations

import functools
import io
import math
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from swerl_cli.cli._paths import (  # noqa: F401  (re-exported: the commands import them from here)
    check_checkpoint_dir,
    check_output_target,
    check_path_flags,
    check_training_paths,
    flag_name,
    training_records,
)
from swerl_cli.core.errors import EXIT_INTERRUPTED, SwerlError, UsageError, missing_dependency

F = TypeVar("F", bound=Callable[..., Any])

# Records own stdout; everything human goes to stderr. markup/highlight off so messages print verbatim.
err_console = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)

INPUT = Annotated[str, typer.Argument(metavar="FILE", help="Input JSONL file (.jsonl or .jsonl.gz); '-' reads stdin.")]
INPUTS = Annotated[
    list[str] | None,
    typer.Argument(metavar="FILES...", help="Input JSONL files (.jsonl or .jsonl.gz); none or '-' reads stdin."),
]
OUTPUT = Annotated[
    str | None,
    typer.Option(
        "--output",
        "-o",
        metavar="PATH",
        help="Write records to this file instead of stdout: replaced atomically when the run succeeds (a device or "
        "FIFO is written in place); a second run on the same file is refused.",
    ),
]
# Slow stages (collect, grade) append and flush each record as it finishes, so an interrupted run keeps its work.
APPEND_OUTPUT = Annotated[
    str | None,
    typer.Option(
        "--output",
        "-o",
        metavar="PATH",
        help="Write records to this file, each flushed as it finishes (a fresh run empties it at its first record; "
        "--resume keeps it); a second run on the same file is refused.",
    ),
]
CONFIG = Annotated[
    str | None,
    typer.Option("--config", "-c", metavar="YAML", help="YAML config file; explicit flags override its values."),
]

TENSORBOARD = Annotated[
    str | None,
    typer.Option(
        "--tensorboard",
        metavar="DIR",
        help="Also write the step metrics as TensorBoard event files under DIR, named as in metrics.jsonl.",
    ),
]
WANDB = Annotated[
    bool,
    typer.Option("--wandb", help="Also log the step metrics to a Weights & Biases run (needs the wandb package)."),
]


def debug_enabled() -> bool:
    """SWERL_DEBUG=1 (or any value but 0/false): let errors keep their traceback."""
    return os.environ.get("SWERL_DEBUG", "") not in ("", "0", "false")


def boundary(name: str) -> Callable[[F], F]:
    """Wrap a command so a SwerlError becomes one stderr line and its exit code, never a traceback.

    Also: a missing optional package (matplotlib for --plot, torch, vllm, ray...) is one line with the install
    command; Ctrl-C exits 130 quietly, SIGTERM / SIGHUP clean up the same way and exit 128 + the signal number,
    and a closed stdout pipe (`swerl ... | head -1`) exits 0 quietly.
    """

    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            install_signal_handlers()
            try:
                guard_std_streams()
                check_finite_flags(kwargs, fn)
                check_path_flags(kwargs, fn)
                return fn(*args, **kwargs)
            except SwerlError as err:
                if debug_enabled():
                    raise
                err_console.print(f"swerl {name}: {err}")
                raise typer.Exit(err.exit_code) from None
            except ModuleNotFoundError as err:
                missing = missing_dependency(err)
                if missing is None or debug_enabled():
                    raise
                err_console.print(f"swerl {name}: {missing}")
                raise typer.Exit(missing.exit_code) from None
            except KeyboardInterrupt:
                if debug_enabled():
                    raise
                if _terminated_by is not None:
                    err_console.print(f"swerl {name}: terminated by {signal.Signals(_terminated_by).name}")
                    raise typer.Exit(128 + _terminated_by) from None
                err_console.print(f"swerl {name}: interrupted")
                raise typer.Exit(EXIT_INTERRUPTED) from None
            except BrokenPipeError:
                _silence_stdout()
                raise typer.Exit(0) from None

        return wrapper  # type: ignore[return-value]

    return deco


def check_finite_flags(params: dict[str, Any], fn: Callable[..., Any] | None = None) -> None:
    """Every float flag is a finite number: `--temperature nan` or `--lr inf` is a usage error (exit 2) before any
    work, not a traceback mid-episode or from torch. No float flag of swerl gives nan or inf a meaning."""
    for name, value in params.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, float) and not math.isfinite(v):
                flag = flag_name(fn, name) if fn is not None else f"--{name.replace('_', '-')}"
                raise UsageError(f"{flag}: must be a finite number; got {v}")


class _ClosedStream:
    """Stands for a standard stream the caller closed (`<&-`, `>&-`): any use is one usage line (exit 2)."""

    def __init__(self, name: str, hint: str):
        self.name, self.hint = name, hint

    def _fail(self, *_: Any, **__: Any) -> Any:
        raise UsageError(f"{self.name} is closed: {self.hint}")

    buffer = property(_fail)
    read = readline = write = _fail

    def fileno(self) -> int:
        # what Python raises for a stream without a descriptor (an OSError and a ValueError): probes such as
        # stdio._real_stdout treat it as "not a real stdout"; reading or writing records still fails with _fail
        raise io.UnsupportedOperation(f"{self.name} is closed")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def __iter__(self) -> Any:
        return self._fail()


def guard_std_streams() -> None:
    """A standard stream closed by the caller: Python sets `sys.stdin` / `sys.stdout` to None (an AttributeError
    at first use). Put a `_ClosedStream` there instead, and hold the descriptor with /dev/null, so a file this run
    opens cannot become fd 0/1/2 (a child process, git or docker, would read or write it as its stdin/stdout)."""
    hints = {
        "stdin": "pipe records in or name an input FILE",
        "stdout": "redirect it or write to a file with -o",
        "stderr": "",
    }
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        if getattr(sys, name) is not None:
            continue
        from swerl_cli.streams.outputs import mark_std_closed

        mark_std_closed(fd)  # `-o /dev/stdout` (or /dev/fd/N) is refused, not written to the /dev/null below
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
            except OSError:
                pass
        if name == "stderr":
            sys.stderr = open(os.devnull, "w")  # nowhere to report to; the exit code still tells
            err_console.file = sys.stderr
        else:
            setattr(sys, name, _ClosedStream(name, hints[name]))


OVERWRITE = Annotated[
    bool, typer.Option("--overwrite", help="Replace an existing --output that is not a swerl checkpoint.")
]


_terminated_by: int | None = None


def _on_terminate(signum: int, frame: Any) -> None:
    """SIGTERM / SIGHUP take the Ctrl-C path (asyncio's graceful cancel when it runs, else KeyboardInterrupt), so
    every command's interrupt cleanup (temp files, sandboxes) runs; the boundary then exits 128 + signum."""
    global _terminated_by
    _terminated_by = signum
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and handler is not signal.default_int_handler and handler is not _on_terminate:
        handler(signal.SIGINT, frame)  # asyncio.run's handler: cancels the main task like a first Ctrl-C
        return
    raise KeyboardInterrupt


def install_signal_handlers() -> None:
    """Route SIGTERM and SIGHUP through `_on_terminate` (main thread only; a handler someone else set is kept, and
    so is a signal the caller ignores, as `nohup` does). A blocked mask inherited from the parent (a launcher that
    blocked them around its fork) is lifted for SIGINT, SIGTERM and SIGHUP: else the signal waits unseen and the
    run cannot be stopped cleanly."""
    global _terminated_by
    _terminated_by = None
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None, _on_terminate):
            signal.signal(sig, _on_terminate)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))  # handlers first


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
