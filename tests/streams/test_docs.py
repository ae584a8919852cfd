"""Every command has help; docs/cli.md matches the real --help (regenerate with `make docs`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import typer.main

from swerl_cli.cli import app

ROOT = Path(__file__).resolve().parents[2]


def _gen():
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "scripts" / "gen_cli_docs.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_help_for_every_command() -> None:
    gen = _gen()
    root = typer.main.get_command(app)
    paths = [p for p, _ in gen._walk(root, ["swerl"])]
    names = {" ".join(p) for p in paths}
    for cmd in ("filter", "eval", "collect", "grade", "rft", "dapo", "tasks", "sandbox"):
        assert f"swerl {cmd}" in names
    for path, cmd in gen._walk(root, ["swerl"]):
        assert (cmd.help or "").strip(), f"{' '.join(path)} has no help text"
        text = gen.help_text(root, path)
        assert text.startswith("Usage: " + " ".join(path)), text


def test_cli_docs_are_current() -> None:
    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == _gen().render(), "docs/cli.md is stale: run `make docs`"
