"""`swerl dapo`: One DAPO update on graded trajectory groups; writes the next checkpoint."""

from __future__ import annotations

import typer

from swerl_cli.cli._common import boundary
from swerl_cli.errors import NotImplementedYetError


def register(app: typer.Typer) -> None:
    app.command("dapo", help="One DAPO update on graded trajectory groups; writes the next checkpoint.")(_dapo)


@boundary("dapo")
def _dapo() -> None:
    raise NotImplementedYetError("not implemented yet: DAPO lands with issue 6")
