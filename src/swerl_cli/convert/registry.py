"""The converter registry: `--from` name -> "module:Class" (a `Converter` of base.py), imported when chosen.

Nothing outside a converter's module names it; a plugin or a test adds one with `register_converter`. `create`
builds one from its own `Options` (`core/plugins.py`), `choices` lists them.
"""

from __future__ import annotations

from typing import Any

from swerl_cli.convert.base import Converter
from swerl_cli.core import plugins
from swerl_cli.core.plugins import Registry

FORMATS = Registry(
    {
        "swe-agent": "swerl_cli.convert.sweagent:SweAgent",
        "mini-swe-agent": "swerl_cli.convert.mini:MiniSweAgent",
        "openhands": "swerl_cli.convert.openhands:OpenHands",
        "sft": "swerl_cli.convert.sft:SftRows",
        "preds": "swerl_cli.convert.preds:Predictions",
        "swebench-report": "swerl_cli.convert.harness:SwebenchReport",
    },
    unknown="unknown format {name!r}; choose one of {choices}",
)
register_converter = FORMATS.register


def choices() -> list[str]:
    """The registered formats, in registration order (`--from` also takes auto and swerl)."""
    return FORMATS.choices()


def create(name: str, **options: Any) -> Converter:
    """The converter `name`, built from its own `Options` read by name from `options` (others, and None, ignored);
    ConfigError naming the choices for an unknown name."""
    converter: Converter = FORMATS.create(name, **options)
    return converter


def converters(fmt: str, **options: Any) -> list[Converter]:
    """The converters a run uses, each built by `create`: every registered one for `auto` (in `--from auto`'s
    detection order), else the one named."""
    active = [create(n, **options) for n in (choices() if fmt == "auto" else [fmt])]
    return sorted(active, key=lambda c: (c.detect_rank is None, c.detect_rank or 0))


def detect(obj: Any, candidates: list[Converter]) -> Converter | None:
    """The first of `candidates` whose shape `obj` has (the one detection rule, core.plugins.detect), or None."""
    return plugins.detect(candidates, obj)
