"""The examples in swerl's docstrings run: each module with a `>>>` line is put through doctest (they are the
contract a reader takes from the docstring, and one went stale unnoticed when it was not run)."""

from __future__ import annotations

import doctest
import importlib
import re

import pytest

from tests.conftest import ROOT

SRC = ROOT / "src"
EXAMPLE = re.compile(r"^\s*>>> ", re.MULTILINE)  # an example line, not a `>>>>>` in a string
MODULES = sorted(
    ".".join(p.relative_to(SRC).with_suffix("").parts)
    for p in (SRC / "swerl_cli").rglob("*.py")
    if EXAMPLE.search(p.read_text(encoding="utf-8"))
)


def test_modules_with_examples_are_found():
    assert "swerl_cli.core.errors" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has an example line but doctest found no example"
    assert result.failed == 0
