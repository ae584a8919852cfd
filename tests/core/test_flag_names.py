"""Flags are the kebab-case twins of config fields (`--timeout-s` <-> `timeout_s`), never renamed on the way down."""

from __future__ import annotations

import dataclasses

import pytest
import typer.main

from swerl_cli.cli import app
from swerl_cli.collect import CollectConfig
from swerl_cli.grading.grade import GradeConfig

# Options of a command that are not config fields: where records go, and what to do with the output.
NOT_CONFIG = {"output", "config", "resume", "tasks", "report", "quiet", "progress"}


def _options(path: list[str]) -> dict[str, list[str]]:
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    return {p.name: [o for o in p.opts if o.startswith("--")] for p in cmd.params if p.opts[0].startswith("-")}


@pytest.mark.parametrize(("path", "cfg"), [(["grade"], GradeConfig), (["collect"], CollectConfig)])
def test_every_config_flag_is_its_fields_twin(path, cfg):
    fields = {f.name for f in dataclasses.fields(cfg)}
    for param, longs in _options(path).items():
        if param in NOT_CONFIG or param == "help":
            continue
        assert param in fields, f"swerl {' '.join(path)} {longs}: no config field named {param!r}"
        twin = "--" + param.replace("_", "-")
        assert (
            twin in longs
            or f"{twin}/--no-{param.replace('_', '-')}" in longs
            or any(o.split("/")[0] == twin for o in longs)
        ), f"swerl {' '.join(path)}: field {param!r} has flags {longs}, not {twin}"
