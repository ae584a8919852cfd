"""`swerl grade`: Grade trajectories (or SWE-bench predictions) by running the task's tests in a fresh sandbox."""

from __future__ import annotations

import typer

from swerl_cli.cli._common import boundary
from swerl_cli.errors import NotImplementedYetError


def register(app: typer.Typer) -> None:
    app.command("grade", help="Grade trajectories (or SWE-bench predictions) by running the task's tests in a fresh sandbox.")(_grade)


@boundary("grade")
def _grade() -> None:
    raise NotImplementedYetError("not implemented yet: sandboxes and grading land with issue 3")
