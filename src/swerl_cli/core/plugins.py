"""Registries of backends: short name -> "module:Class", imported only when a name is chosen."""

from __future__ import annotations

import importlib
from typing import Any

from swerl_cli.core.errors import ConfigError


def load_registered(registry: dict[str, str], name: str, unknown: str) -> Any:
    """The object `registry[name]` points at ("module:attr"); ConfigError(`unknown`) when `name` is not there."""
    if name not in registry:
        raise ConfigError(unknown)
    module, _, attr = registry[name].partition(":")
    return getattr(importlib.import_module(module), attr)
