"""`swerl sandbox`: manage sandbox containers."""

from __future__ import annotations

from typing import Annotated

import typer

from swerl_cli.cli._common import boundary, err_console

app = typer.Typer(help="Manage sandbox containers.", no_args_is_help=True)


@app.command("prune", help="Remove leftover swerl containers (label swerl.managed=1), optionally of one run only.")
@boundary("sandbox prune")
def _prune(
    run: Annotated[str | None, typer.Option("--run", help="Only containers labelled swerl.run=RUN.")] = None,
    stale: Annotated[
        bool, typer.Option("--stale", help="Only containers whose owning swerl process is gone (safe during runs).")
    ] = False,
) -> None:
    from swerl_cli.sandbox.docker import prune

    removed = prune(run, stale_only=stale)
    err_console.print(f"swerl sandbox prune: removed {len(removed)} container(s)")
