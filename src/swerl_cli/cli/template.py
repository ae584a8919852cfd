"""`swerl check-template`: Check that a model's chat template keeps earlier turns' tokens unchanged across turns."""

from __future__ import annotations

import typer

from swerl_cli.cli._common import boundary
from swerl_cli.errors import NotImplementedYetError


def register(app: typer.Typer) -> None:
    app.command("check-template", help="Check that a model's chat template keeps earlier turns' tokens unchanged across turns.")(_check_template)


@boundary("check-template")
def _check_template() -> None:
    raise NotImplementedYetError("not implemented yet: token-exact collection lands with issue 4")
