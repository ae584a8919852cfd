"""The `swerl` command line: one typer app, one thin module per command."""

from __future__ import annotations

import typer

from swerl_cli import __version__
from swerl_cli.cli import collect, convert, dapo, eval, filter, grade, report, rft, sandbox, tasks, tasks_mine, template

app = typer.Typer(
    name="swerl",
    help="Train software-engineering agents with RL. Every command reads and writes JSONL record streams.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"swerl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_version, is_eager=True
    ),
) -> None:
    """Train software-engineering agents with RL. Every command reads and writes JSONL record streams."""


tasks_mine.register(tasks.app)
app.add_typer(tasks.app, name="tasks")
app.add_typer(sandbox.app, name="sandbox")
for module in (collect, grade, filter, rft, dapo, eval, report, template, convert):
    module.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
