"""Registries of backends: short name -> "module:Class", imported only when a name is chosen."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, TypeVar

from swerl_cli.core.errors import ConfigError

T = TypeVar("T")
_O = TypeVar("_O", bound="Options")
_P = TypeVar("_P", bound="Plugin")
UNKNOWN = "unknown name {name!r}; choose one of {choices}"


class Registry(dict[str, str]):
    """Short name -> "module:attr"; a plugin or a test adds an entry with `register`.

    A seam's registry (policy, importer, converter) also builds its backends: `create(name, **options)` imports the
    class `name` points at and builds it from its own `Options`, read by name from `options`; `choices()` lists
    the names; an unknown name is one ConfigError, worded by `unknown` ("{name!r}" and "{choices}" filled in).
    """

    def __init__(self, entries: dict[str, str] | None = None, /, *, unknown: str = UNKNOWN) -> None:
        super().__init__(entries or {})
        self.unknown = unknown

    def register(self, name: str, target: str) -> None:
        """Add (or replace) `name` as `"module:attr"`."""
        self[name] = target

    def load(self, name: str, unknown: str) -> Any:
        """The object `name` points at, imported now; ConfigError(`unknown`) when `name` is not registered."""
        if name not in self:
            raise ConfigError(unknown)
        module, _, attr = self[name].partition(":")
        return getattr(importlib.import_module(module), attr)

    def choices(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self)

    def cls(self, name: str) -> Any:
        """The class registered as `name`, imported now; ConfigError naming the choices when there is none."""
        return self.load(name, self.unknown.format(name=name, choices=", ".join(self)))

    def create(self, name: str, **options: object) -> Any:
        """The backend `name`, built by its class's `create` from its own `Options` read by name from `options`
        (options it has no field for, and None values, are ignored: `Options.from_options`)."""
        cls = self.cls(name)
        return cls.create(cls.Options.from_options(**options))


class Options:
    """A backend's own options (policy, importer, converter, loss): a frozen dataclass whose fields are named like
    the settings they come from (a command's flags, a config's fields), so `from_options` reads them from any
    command's settings and the defaults are declared here once."""

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

    @classmethod
    def from_section(cls: type[_O], section: Mapping[str, object], where: str) -> _O:
        """The options of a config section that names only this backend's options (YAML `policy: {name: vllm,
        tensor_parallel_size: 2}`, less its `name`): a key that is none of them is one ConfigError naming
        `where`, the key and the options there are."""
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        for key in section:
            if key not in names:
                known = ", ".join(names) or "none"
                raise ConfigError(f"{where}: unknown option {str(key)[:80]!r} (its options: {known})")
        return cls(**section)


_Options = Options  # the base, named so where a class attribute `Options` hides it


class Plugin:
    """Base of a registered backend that is built from its options alone (importers, converters): `name`, its
    `Options` (an `Options` subclass) and `create(options)`; one whose building checks more overrides `create`."""

    name: ClassVar[str] = ""
    Options: ClassVar[type[_Options]] = _Options

    def __init__(self, options: _Options | None = None) -> None:
        self.options: Any = options if options is not None else self.Options()

    @classmethod
    def create(cls: type[_P], options: _Options) -> _P:
        """The backend configured by `options` (an instance of `cls.Options`)."""
        return cls(options)


def detect(candidates: Iterable[T], obj: Any) -> T | None:
    """The one detection rule of `auto` formats (importers, converters): the candidates (classes or instances with
    `detect_rank` and `matches(obj)`) are asked lowest `detect_rank` first, a rank of None never; the first that
    matches, or None."""
    ranked = sorted((c for c in candidates if getattr(c, "detect_rank", None) is not None), key=_rank)
    return next((c for c in ranked if c.matches(obj)), None)  # type: ignore[attr-defined]


def _rank(c: Any) -> int:
    rank: int = c.detect_rank
    return rank
