"""`swerl filter`: Keep the records that pass the given predicates."""

from __future__ import annotations

import typer

from swerl_cli.cli._common import boundary
from swerl_cli.errors import NotImplementedYetError


def register(app: typer.Typer) -> None:
    app.command("filter", help="Keep the records that pass the given predicates.")(_filter)


@boundary("filter")
def _filter() -> None:
    raise NotImplementedYetError("not implemented yet")
