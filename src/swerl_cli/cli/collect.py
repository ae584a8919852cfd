"""`swerl collect`: Run the agent on task records and write one trajectory record per (task, sample)."""

from __future__ import annotations

import typer

from swerl_cli.cli._common import boundary
from swerl_cli.errors import NotImplementedYetError


def register(app: typer.Typer) -> None:
    app.command("collect", help="Run the agent on task records and write one trajectory record per (task, sample).")(_collect)


@boundary("collect")
def _collect() -> None:
    raise NotImplementedYetError("not implemented yet: the agent scaffold and policies land with issue 4")
