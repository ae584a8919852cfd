"""The converter registry: `--from` name -> "module:Class" (a `Converter` of base.py), imported when chosen.

Nothing outside a converter's module names it; a plugin or a test adds one with `register_converter`.
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
    }
)
register_converter = FORMATS.register


def converter_class(name: str) -> type[Converter]:
    """The class registered as `name`; ConfigError naming the choices otherwise."""
    cls: type[Converter] = FORMATS.load(name, f"unknown format {name!r}; choose one of {', '.join(FORMATS)}")
    return cls


def converters(fmt: str, **options: Any) -> list[Converter]:
    """The converters a run uses, each with its own config from `options`: every registered one for `auto`
    (in `--from auto`'s detection order), else the one named."""
    names = list(FORMATS) if fmt == "auto" else [fmt]
    classes = [converter_class(n) for n in names]
    classes.sort(key=lambda c: (c.detect_rank is None, c.detect_rank or 0))
    return [c(c.Config.from_options(**options)) for c in classes]


def detect(obj: Any, candidates: list[Converter]) -> Converter | None:
    """The first of `candidates` whose shape `obj` has (the one detection rule, core.plugins.detect), or None."""
    return plugins.detect(candidates, obj)
