"""`swerl tasks`: import SWE-bench-style rows, build task images, validate tasks."""

from __future__ import annotations

import typer

from swerl_cli.cli._common import boundary
from swerl_cli.errors import NotImplementedYetError

app = typer.Typer(help="Import SWE-bench-style rows as task records, build task images, validate tasks.",
                  no_args_is_help=True)


@app.command("import", help="Read SWE-bench / SWE-rebench / SWE-Gym rows and write task records.")
@boundary("tasks import")
def _import() -> None:
    raise NotImplementedYetError("not implemented yet: task import lands with issue 3")


@app.command("build", help="Build task images from their setup commands on a base image.")
@boundary("tasks build")
def _build() -> None:
    raise NotImplementedYetError("not implemented yet: image builds land with issue 3")


@app.command("validate", help="Grade gold and empty patches per task; write tasks back with a validation field.")
@boundary("tasks validate")
def _validate() -> None:
    raise NotImplementedYetError("not implemented yet: validation lands with issue 3")
