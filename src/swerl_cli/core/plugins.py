"""Registries of backends: short name -> "module:Class", imported only when a name is chosen."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable
from typing import Any, TypeVar

from swerl_cli.core.errors import ConfigError

T = TypeVar("T")
_O = TypeVar("_O", bound="Options")


class Registry(dict[str, str]):
    """Short name -> "module:attr"; a plugin or a test adds an entry with `register`."""

    def register(self, name: str, target: str) -> None:
        """Add (or replace) `name` as `"module:attr"`."""
        self[name] = target

    def load(self, name: str, unknown: str) -> Any:
        """The object `name` points at, imported now; ConfigError(`unknown`) when `name` is not registered."""
        if name not in self:
            raise ConfigError(unknown)
        module, _, attr = self[name].partition(":")
        return getattr(importlib.import_module(module), attr)


class Options:
    """A backend's own options (policy, loss): a frozen dataclass whose fields are named like the settings they come
    from (a command's flags, a config's fields), so `from_options` reads them from any command's settings and the
    defaults are declared here once."""

    @classmethod
    def from_options(cls: type[_O], **options: object) -> _O:
        """The options of a run: each field is read from the option of its name; other options, and None values
        (a flag not given), are ignored, so the field's default stays."""
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in options.items() if k in names and v is not None})

    @classmethod
    def default(cls, name: str) -> Any:
        """The declared default of field `name` (a config that exposes the option as a flag takes it from here)."""
        field = next(f for f in dataclasses.fields(cls) if f.name == name)  # type: ignore[arg-type]
        return field.default


def detect(candidates: Iterable[T], obj: Any) -> T | None:
    """The one detection rule of `auto` formats (importers, converters): the candidates (classes or instances with
    `detect_rank` and `matches(obj)`) are asked lowest `detect_rank` first, a rank of None never; the first that
    matches, or None."""
    ranked = sorted((c for c in candidates if getattr(c, "detect_rank", None) is not None), key=_rank)
    return next((c for c in ranked if c.matches(obj)), None)  # type: ignore[attr-defined]


def _rank(c: Any) -> int:
    rank: int = c.detect_rank
    return rank
