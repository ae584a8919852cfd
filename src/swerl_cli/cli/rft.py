"""`swerl rft`: Rejection fine-tuning: train on the action tokens of selected trajectories; writes a checkpoint."""

from __future__ import annotations

import typer

from swerl_cli.cli._common import boundary
from swerl_cli.errors import NotImplementedYetError


def register(app: typer.Typer) -> None:
    app.command("rft", help="Rejection fine-tuning: train on the action tokens of selected trajectories; writes a checkpoint.")(_rft)


@boundary("rft")
def _rft() -> None:
    raise NotImplementedYetError("not implemented yet: the training core lands with issue 5")
