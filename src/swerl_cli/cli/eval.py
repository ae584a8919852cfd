"""`swerl eval`: Report pass@1 and pass@k over graded records."""

from __future__ import annotations

import typer

from swerl_cli.cli._common import boundary
from swerl_cli.errors import NotImplementedYetError


def register(app: typer.Typer) -> None:
    app.command("eval", help="Report pass@1 and pass@k over graded records.")(_eval)


@boundary("eval")
def _eval() -> None:
    raise NotImplementedYetError("not implemented yet")
