"""Every command has help; docs/cli.md matches the real --help (regenerate with `make docs`)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
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
    # A fresh process: the suite's own plugin backends (tests/sandbox/test_contract.py registers one) must not
    # reach the help texts that list the registered backends.
    code = "import runpy, sys; sys.stdout.write(runpy.run_path(sys.argv[1])['render']())"
    res = subprocess.run([sys.executable, "-c", code, str(ROOT / "scripts" / "gen_cli_docs.py")],
                         capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == res.stdout, "docs/cli.md is stale: run `make docs`"


_CITED_MD = re.compile(r"(?<![\w/.-])((?:docs/)?[\w-]+\.md)\b")
# Module paths as the package's docstrings cite them: `policy/vllm.py`, `swerl_cli/streams/outputs.py`, `scripts/x.py`.
_PKG_DIRS = "agent|cli|collect|convert|grading|policy|sandbox|training|swerl_cli|scripts|benchmarks"
_CITED_PY = re.compile(rf"(?<![\w/.-])((?:{_PKG_DIRS})/[\w/]*\.py)\b")
PKG = ROOT / "src" / "swerl_cli"


def _cited(pattern: re.Pattern[str], roots: list[str]) -> list[tuple[Path, int, str]]:
    """(file, line, name) of each citation; in tests only docstring and comment lines (test data may name files)."""
    found = []
    for root in roots:
        for path in sorted((ROOT / root).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if root == "tests" and '"""' not in line and "#" not in line:
                    continue
                found += [(path, n, m) for m in pattern.findall(line)]
    return found


def test_files_cited_in_source_exist() -> None:
    """A docstring or comment that names a doc or a module names one that is in the repository."""
    missing = []
    for path, n, name in _cited(_CITED_MD, ["src", "scripts", "benchmarks", "tests"]):
        if not any((ROOT / base / name).exists() for base in ("", "docs")):
            missing.append(f"{path.relative_to(ROOT)}:{n}: {name}")
    for path, n, name in _cited(_CITED_PY, ["src", "scripts", "benchmarks"]):
        bases = (ROOT, PKG, PKG.parent, path.parent)
        if not any((base / name).exists() for base in bases):
            missing.append(f"{path.relative_to(ROOT)}:{n}: {name}")
    assert not missing, "cited files that do not exist:\n" + "\n".join(missing)
