"""Start-up: every stage of a pipe pays it, so a command imports what it uses and nothing else."""

from __future__ import annotations

import subprocess
import sys

import typer.main

from swerl_cli.cli import COMMANDS, app

HEAVY = {"torch", "transformers", "vllm", "ray", "deepspeed", "pandas", "pyarrow", "matplotlib", "httpx", "openai"}


def _imports(*args: str, cwd=None) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `python -X importtime -m swerl_cli ARGS`; return the result and every module it imported."""
    res = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "swerl_cli", *args], capture_output=True, text=True, cwd=cwd
    )
    mods = {line.rsplit("|", 1)[1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")}
    return res, mods - {"imported package"}


def _packages(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods}


def test_help_imports_no_heavy_package_and_no_engine_client() -> None:
    res, mods = _imports("--help")
    assert res.returncode == 0
    assert {"collect", "grade", "tasks"} <= set(res.stdout.split())  # the whole app is there
    assert not _packages(mods) & (HEAVY | {"docker", "requests"}), sorted(_packages(mods))


def test_tasks_pull_builds_only_its_own_command(tmp_path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    res, mods = _imports("tasks", "pull", str(tmp_path / "empty.jsonl"))
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 images" in res.stderr
    assert not _packages(mods) & HEAVY
    assert "docker" not in _packages(mods)  # nothing to pull: no engine client
    others = {m for m in mods if m.startswith(("swerl_cli.cli.", "swerl_cli.grading", "swerl_cli.training"))}
    # the group's own
    own = {"_common", "_flags", "_images", "_paths", "tasks", "tasks_pull", "tasks_mine", "tasks_synth"}
    # `tasks validate`'s options are GradeConfig's flag fields: its light config module, not the grading machinery
    configs = {"swerl_cli.grading", "swerl_cli.grading.config"}
    assert others <= {f"swerl_cli.cli.{m}" for m in own} | configs, sorted(others)


def test_filter_imports_neither_docker_nor_training_packages(tmp_path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    res, mods = _imports("filter", str(tmp_path / "empty.jsonl"))
    assert res.returncode == 0, res.stderr[-2000:]
    assert not _packages(mods) & (HEAVY | {"docker"})


def test_every_command_of_the_app_is_in_the_lazy_table() -> None:
    # `main` builds only the command named on the command line, looked up in COMMANDS: a command missing there
    # would still run (the whole app is built for an unknown name), but slowly; one listed there must exist.
    assert set(typer.main.get_command(app).commands) == set(COMMANDS)  # type: ignore[attr-defined]


def _listed(help_text: str) -> list[str]:
    return [
        line.split()[0]
        for line in help_text.split("Commands:", 1)[1].splitlines()
        if line[:2] == "  " and line[2:3] != " "
    ]


def test_a_command_run_alone_lists_the_same_subcommands_as_in_the_whole_app() -> None:
    from typer.testing import CliRunner

    alone = subprocess.run([sys.executable, "-m", "swerl_cli", "tasks", "--help"], capture_output=True, text=True)
    assert alone.returncode == 0
    whole = CliRunner().invoke(app, ["tasks", "--help"])
    assert _listed(alone.stdout) == _listed(whole.stdout) == ["pull", "import", "build", "validate", "mine", "synth"]
