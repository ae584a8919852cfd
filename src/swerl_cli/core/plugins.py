"""Registries of backends: short name -> "module:Class", imported only when a name is chosen."""

from __future__ import annotations

import importlib
from typing import Any

from swerl_cli.core.errors import ConfigError


class Registry(dict[str, str]):
    """Short name -> "module:attr"; a plugin or a test adds an entry with `register`."""

    def register(self, name: str, target: str) -> None:
        """Add (or replace) `name` as `"module:attr"`."""
        self[name] = target

    def load(self, name: str, unknown: str) -> Any:
        """The object `name` points at, imported now; ConfigError(`unknown`) when `name` is not registered."""
        return load_registered(self, name, unknown)


def load_registered(registry: dict[str, str], name: str, unknown: str) -> Any:
    """The object `registry[name]` points at ("module:attr"); ConfigError(`unknown`) when `name` is not there."""
    if name not in registry:
        raise ConfigError(unknown)
    module, _, attr = registry[name].partition(":")
    return getattr(importlib.import_module(module), attr)
