"""Flags are the kebab-case twins of config fields (`--timeout-s` <-> `timeout_s`), never renamed on the way down."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from swerl_cli.cli import app
from swerl_cli.cli._flags import Flags, config_options
from swerl_cli.collect import CollectConfig
from swerl_cli.core.config import flag, flag_fields, init_fields, resolve_config
from swerl_cli.executor import JobSettings
from swerl_cli.filtering.spec import FilterSpec
from swerl_cli.grading.grade import GradeConfig
from swerl_cli.sandbox.images import PullConfig
from swerl_cli.training.dapo_config import DapoConfig
from swerl_cli.training.follow import FollowOptions
from swerl_cli.training.rft_config import RftConfig

# Options of a command that are not config fields: where records go, and what to do with the output.
NOT_CONFIG = {"output", "config", "resume", "tasks", "report", "quiet", "progress", "tensorboard", "wandb", "overwrite"}
NOT_CONFIG |= {"follow"} | {f.name for f in dataclasses.fields(FollowOptions)}  # dapo --follow


def _options(path: list[str]) -> dict[str, list[str]]:
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    return {p.name: [o for o in p.opts if o.startswith("--")] for p in cmd.params if p.opts[0].startswith("-")}


@pytest.mark.parametrize(
    ("path", "cfg"),
    [(["grade"], GradeConfig), (["collect"], CollectConfig), (["rft"], RftConfig), (["dapo"], DapoConfig)],
)
def test_every_config_flag_is_its_fields_twin(path, cfg):
    fields = {f.name for f in init_fields(cfg)}  # a config's InitVars (collect's policy options) are flags too
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


def _command(path: list[str]):
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    return cmd


@pytest.mark.parametrize(
    ("path", "cfg"),
    [
        (["grade"], GradeConfig),
        (["collect"], CollectConfig),
        (["tasks", "validate"], GradeConfig),
        (["rft"], RftConfig),
        (["dapo"], DapoConfig),
        (["filter"], FilterSpec),
        (["tasks", "pull"], PullConfig),
    ],
)
def test_a_config_flag_is_declared_once_on_its_field(path, cfg):
    """The help (and metavar) of every option that is a config field is the one its field declares."""
    specs = {f.name: spec for f, spec in flag_fields(cfg)}
    fields = {f.name for f in init_fields(cfg)}
    params = [p for p in _command(path).params if p.name in fields]
    assert params
    for p in params:
        assert p.name in specs, f"swerl {' '.join(path)}: --{p.name} is not declared on its field"
        assert p.help == specs[p.name].help
        if specs[p.name].metavar:
            assert p.metavar == specs[p.name].metavar


def test_the_job_flags_are_the_same_on_every_command_that_runs_jobs():
    job = {f.name for f in dataclasses.fields(JobSettings)}
    assert len(job) == 8  # registry, pull, image_budget_gb, sandbox_option, ray, episode_cpus, _memory_gb, _retries
    for path in (["collect"], ["grade"], ["tasks", "validate"]):
        opts = {p.name: (p.opts, p.help, p.metavar) for p in _command(path).params if p.name in job}
        assert opts == {p.name: (p.opts, p.help, p.metavar) for p in _command(["grade"]).params if p.name in job}
        assert set(opts) == job


@dataclasses.dataclass(frozen=True)
class _Base:
    depth: int = flag(1, "How deep.", metavar="N")
    level: int = flag(0, "A base field.")


@dataclasses.dataclass(frozen=True)
class _Toy(_Base):
    name: str = flag("x", "A name.", names=("--name", "-n"))
    urls: tuple[str, ...] = flag((), "A URL; repeat for more.")
    fast: bool = flag(False, "Go fast.")
    depth: int = flag(1, "How deep (redeclared).", metavar="N")
    hidden: int = 7  # YAML only: no flag


def _toy_app():
    seen: list[_Toy] = []
    toy = typer.Typer(add_completion=False)

    @toy.command()
    @config_options(_Toy)
    def run(config: str | None = None, flags: Flags | None = None) -> None:
        seen.append(resolve_config(_Toy, config, **(flags or {})))

    return toy, seen


def test_generated_options_keep_the_yaml_unless_given(tmp_path):
    toy, seen = _toy_app()
    runner = CliRunner()
    yaml = tmp_path / "c.yaml"
    yaml.write_text("name: from-yaml\nurls: [a]\nfast: true\ndepth: 3\nhidden: 9\n")
    assert runner.invoke(toy, ["--config", str(yaml)]).exit_code == 0
    assert seen[-1] == _Toy(name="from-yaml", urls=("a",), fast=True, depth=3, hidden=9)
    res = runner.invoke(toy, ["--config", str(yaml), "-n", "flag", "--urls", "b", "--urls", "c", "--no-fast"])
    assert res.exit_code == 0, res.output
    assert seen[-1] == _Toy(name="flag", urls=("b", "c"), fast=False, depth=3, hidden=9)
    assert runner.invoke(toy, ["--hidden", "1"]).exit_code == 2  # not a flag
    params = {p.name: p for p in typer.main.get_command(toy).params}
    assert (params["depth"].help, params["depth"].metavar) == ("How deep (redeclared).", "N")
    # in --help: the command's own options, then the subclass's fields (a redeclared one among them), then the base's
    assert list(params) == ["config", "name", "urls", "fast", "depth", "level"]


def test_no_command_gathers_its_flags_with_locals():
    """Flags reach a config through `config_options`, never by filtering a command's `locals()`."""
    cli = Path(__file__).resolve().parents[2] / "src" / "swerl_cli" / "cli"
    calls = [
        f"{path.name}:{node.lineno}"
        for path in sorted(cli.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "locals"
    ]
    assert calls == []


def test_dapo_follow_options_come_from_follow_options_fields_with_their_defaults():
    params = {p.name: p for p in _command(["dapo"]).params}
    for field, spec in flag_fields(FollowOptions):
        assert params[field.name].help == spec.help
        assert params[field.name].default == field.default  # shown in --help: no YAML layer under these
    assert params["push_url"].opts == ["--push"]
    assert params["idle_timeout_s"].opts == ["--idle-timeout"]
