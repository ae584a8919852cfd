"""How an option reaches a sandbox backend (docs/architecture.md, "How an option reaches a backend").

A command's config names the backend (`sandbox`) and holds the settings its flags and YAML give. The backend's
`Options` reads the ones named like its fields (`repo_dir`, `registry`, `pull`, `image_budget_gb`), and any other
option of the backend comes as `--sandbox-option KEY=VALUE` (YAML `sandbox_option: [KEY=VALUE, ...]`), checked
against that backend's `Options` here: a key it lacks, or a value its field's type refuses, is one ConfigError. So a
new backend's option needs no field on any command's config.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Collection, Iterable
from typing import Any

from swerl_cli.core.errors import ConfigError

FIELD = "sandbox_option"  # the config field (flag --sandbox-option) holding KEY=VALUE items
_BOOLS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def settings(cfg: Any, options: type) -> dict[str, Any]:
    """The options a command's config gives its sandbox backend (whose `Options` class is `options`): the config's
    fields by name, then its `sandbox_option` items (a key that is one of the config's own fields is refused: that
    setting has a flag of its own)."""
    fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.init}
    items = fields.pop(FIELD, None) or ()
    return {**fields, **parse(cfg.sandbox, options, items, own=set(fields))}


def parse(backend: str, cls: type, items: Iterable[str], own: Collection[str] = ()) -> dict[str, Any]:
    """`KEY=VALUE` items as typed options of `cls` (the `Options` of sandbox backend `backend`, named in errors);
    ConfigError naming the field and the item."""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ConfigError(f"field '{FIELD}': expected KEY=VALUE, got {str(item)[:80]!r}")
        if key in own:
            raise ConfigError(f"field '{FIELD}': {key} is a setting of its own; use --{key.replace('_', '-')}")
        if key not in names:
            known = ", ".join(names) or "none"
            raise ConfigError(f"field '{FIELD}': the {backend} backend has no option {key!r} (its options: {known})")
        out[key] = _typed(key, value, hints[key])
    return out


def _typed(key: str, value: str, annotation: Any) -> Any:
    """`value` as the field's type (str, int, float, bool, or one of them or None); ConfigError otherwise."""
    kinds = [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
        if value.lower() in ("", "none", "null"):
            return None
    kind = kinds[0] if len(kinds) == 1 else str
    try:
        if kind is bool:
            return _BOOLS[value.strip().lower()]
        if kind in (int, float, str):
            return kind(value)
    except (KeyError, ValueError):
        pass
    name = getattr(kind, "__name__", str(kind))
    raise ConfigError(f"field '{FIELD}': {key}={value[:80]!r}: expected a value of type {name}")
