"""The `swerl` command line: one typer app, one thin module per command.

A run builds only the command it names: `swerl tasks pull ...` imports `cli/tasks.py` and turns only its options
into click parameters, not every other command's (typer evaluates each option's annotation when it builds a
command, and the command modules import their libraries). Every stage of a pipe pays that start-up, so it is kept
to the one command used. Help, an unknown command and `--version` build the whole app, as does reading `app` (the
tests and the docs generator use it).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Iterable

import typer

from swerl_cli import __version__

# command name -> its module under swerl_cli.cli (each has `register(app)`), in the order help lists them
COMMANDS = {
    "tasks": "tasks",
    "sandbox": "sandbox",
    "collect": "collect",
    "grade": "grade",
    "filter": "filter",
    "rft": "rft",
    "dapo": "dapo",
    "eval": "eval",
    "report": "report",
    "check-template": "template",
    "convert": "convert",
}
HELP = "Train software-engineering agents with RL. Every command reads and writes JSONL record streams."


def _version(value: bool) -> None:
    if value:
        typer.echo(f"swerl {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_version, is_eager=True
    ),
) -> None:
    """Train software-engineering agents with RL. Every command reads and writes JSONL record streams."""


def build(names: Iterable[str] | None = None) -> typer.Typer:
    """The typer app with the named commands (all of them by default)."""
    app = typer.Typer(
        name="swerl",
        help=HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(_root)
    for name in COMMANDS if names is None else names:
        importlib.import_module(f"swerl_cli.cli.{COMMANDS[name]}").register(app)
    return app


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # the whole CLI, built once on first use
        app = globals()["app"] = build()
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console-script entry point (see `_main`). A rank of a multi-process launch (torchrun, deepspeed: WORLD_SIZE > 1)
    leaves without the interpreter's teardown once its work is done and its outputs flushed: C++ destructors of the
    communication backend's threads then raced with the exit under load and aborted a rank ("terminate called without
    an active exception", SIGABRT) after a finished run, which the launcher reports as the run's failure."""
    try:
        _main()
    except SystemExit as e:
        if int(os.environ.get("WORLD_SIZE") or 1) > 1 and "torch" in sys.modules:
            _leave(e.code)
        raise


def _leave(code: object) -> None:
    """atexit handlers, flushed stdio, then _exit: the process's end without static destructors."""
    import atexit

    atexit._run_exitfuncs()
    if isinstance(code, str):  # what the interpreter would have printed for sys.exit("...")
        sys.stderr.write(code + "\n")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed (>&-) or broken: nothing more can reach it
            pass
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


def _main() -> None:
    """The command line. A usage error click finds (an unknown flag or command, a value of the wrong
    type, a missing argument) is one stderr line and exit 2, like the commands' own usage errors; click printed
    four (usage, a hint, a blank line, the error)."""
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    try:
        code = build([name] if name in COMMANDS else None)(standalone_mode=False, prog_name="swerl")
        sys.exit(code if isinstance(code, int) else 0)  # Exit(n) raised by a command (the boundary's codes)
    except typer.TyperException as e:  # typer's own click: its ClickException and UsageError derive from this
        if type(e).__name__ == "NoArgsIsHelpError":  # a bare group (`swerl`, `swerl tasks`): its help, exit 2
            e.show()  # type: ignore[attr-defined]
            sys.exit(e.exit_code)
        ctx = getattr(e, "ctx", None)  # a usage error knows its command
        where = ctx.command_path if ctx is not None else "swerl"
        hint = f" (see {where} --help)" if ctx is not None else ""
        sys.stderr.write(f"{where}: {e.format_message()}{hint}\n")
        sys.exit(e.exit_code)
    except typer.Abort:  # end of input at a prompt
        sys.stderr.write("Aborted!\n")
        sys.exit(1)
    finally:
        # The interpreter's exit collects every imported module's objects (~50 ms with the docker SDK loaded);
        # frozen, they are left to the OS. Nothing here relies on a collection at exit: outputs are closed by
        # their `with` blocks, and cleanups are atexit handlers, which still run. Not after torch: triton's
        # bindings report the objects they still see at exit as leaks (and a training run's 50 ms do not matter).
        if "torch" not in sys.modules:
            gc.freeze()
