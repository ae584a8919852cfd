"""What the contract suites over a seam's registry share (tests/policy/test_policy_contract.py,
tests/tasks/test_importer_contract.py, tests/convert/test_converter_contract.py): each suite is parametrized over the
registry itself (`choices()` at collection), so a backend registered before collection (a plugin's import, a
conftest, `pytest -p tests.plugin_registrations`) is tested with no edit to the suite."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from swerl_cli.core.plugins import Registry


def samples(registry: Registry, name: str, builtin: dict[str, list[Any]]) -> list[Any]:
    """The sample rows (or files) of backend `name`: a built-in's from `builtin`, an out-of-tree one's from the
    `SAMPLES` list of the module it is registered from."""
    if name in builtin:
        return builtin[name]
    module = importlib.import_module(registry[name].partition(":")[0])
    rows = getattr(module, "SAMPLES", None)
    assert rows, f"{name}: give {module.__name__} a SAMPLES list (rows of its format) for the contract suite"
    return list(rows)


def check_options(options: type, base: type) -> None:
    """A backend's `Options`: a frozen dataclass under the seam's options base, every field with a default (so a
    backend can be built from no options at all)."""
    assert issubclass(options, base), f"{options.__name__} is no {base.__name__}"
    assert dataclasses.is_dataclass(options)
    assert options.__dataclass_params__.frozen, f"{options.__name__}: options are frozen"  # type: ignore[attr-defined]
    for f in dataclasses.fields(options):
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        assert has_default, f"{options.__name__}.{f.name}: every option has its one default"


def one_line(error: BaseException) -> str:
    """The error's message, checked to be one line (what the user sees on stderr)."""
    text = str(error)
    assert text, "an empty error"
    assert "\n" not in text, f"not one line: {text!r}"
    return text
