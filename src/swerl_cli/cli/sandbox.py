"""`swerl sandbox`: manage sandbox containers."""

from __future__ import annotations

import typer

from swerl_cli.cli._common import boundary
from swerl_cli.errors import NotImplementedYetError

app = typer.Typer(help="Manage sandbox containers.", no_args_is_help=True)


@app.command("prune", help="Remove leftover swerl containers by label.")
@boundary("sandbox prune")
def _prune() -> None:
    raise NotImplementedYetError("not implemented yet: sandboxes land with issue 3")
