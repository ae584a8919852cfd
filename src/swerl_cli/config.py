"""Config loading shared by every stage: YAML file < explicit flags, unknown keys rejected, one-line errors.

Usage in a stage (configs are frozen dataclasses validated in `__post_init__`):

    cfg = resolve_config(DapoConfig, config_path, eps_high=eps_high, group_size=None)

Flags left at None mean "not given" and do not override the file.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from swerl_cli.errors import ConfigError, UsageError

C = TypeVar("C")


def _loader() -> Any:
    """PyYAML's safe loader, plus YAML 1.2's exponent floats: `1e-4` is a number (YAML 1.1 reads it as a string)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    # appended after PyYAML's own resolvers: it only decides what they left a string, such as `1e-4` or `5E3`
    number = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$")
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", number, list("-+0123456789."))
    return Loader


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; a missing file or a non-mapping is a one-line ConfigError."""
    import yaml

    p = Path(path)
    try:
        data = yaml.load(p.read_text(encoding="utf-8"), Loader=_loader())  # a SafeLoader subclass
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such config file") from None
    except IsADirectoryError:
        raise ConfigError(f"{p}: is a directory, expected a YAML config file") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not UTF-8 text (invalid byte at offset {e.start})") from None
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the config file: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        raise ConfigError(f"{where}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping of config fields at the top level")
    return data


def _coerce(source: str, name: str, value: Any, annotation: Any) -> Any:
    """Check a YAML value against a dataclass field annotation (int/float/str/bool/tuple/list/dict/Optional)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _coerce(source, name, value, inner[0])
        return value
    if annotation is bool:
        if isinstance(value, bool):
            return value
    elif annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif annotation is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif annotation is str:
        if isinstance(value, str):
            return value
    elif origin is dict or annotation is dict:
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}
    elif origin in (tuple, list) or annotation in (tuple, list):
        if isinstance(value, (list, tuple)):
            return tuple(value) if (origin is tuple or annotation is tuple) else list(value)
    else:
        return value
    want = getattr(annotation, "__name__", str(annotation))
    raise ConfigError(f"{source}: field '{name}': expected {want}, got {value!r}")


def resolve_config(cls: type[C], path: str | Path | None = None, /, **flags: Any) -> C:
    """Build `cls` from defaults < YAML file at `path` < flags that are not None."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    values: dict[str, Any] = {}
    given: set[str] = set()
    if path is not None:
        source = str(path)
        for key, value in load_yaml(path).items():
            name = str(key).replace("-", "_")
            if name not in fields:
                close = ", ".join(sorted(f for f in fields if f[:3] == name[:3])) or "see the docs"
                raise ConfigError(f"{source}: unknown field '{key}' (known fields like it: {close})")
            values[name] = _coerce(source, name, value, hints[name])
    for name, value in flags.items():
        if value is not None:
            if name not in fields:
                raise TypeError(f"{cls.__name__} has no field {name!r}")
            values[name] = value
            given.add(name)
    try:
        return cls(**values)
    except ConfigError as e:
        # The rule of docs/cli.md: a bad flag value is a usage error (exit 2), a bad config-file value exit 3.
        named = set(re.findall(r"field '([a-z_0-9]+)'", str(e)))
        if (named and named <= given) or (not named and path is None):
            raise UsageError(f"bad flag value: {e}") from None
        if path is not None and not str(e).startswith(str(path)):
            raise ConfigError(f"{path}: {e}") from None
        raise


def check_positive(name: str, value: float, *, zero_ok: bool = False) -> None:
    """A finite number > 0 (>= 0 with `zero_ok`), else a ConfigError naming the field (nan and inf included)."""
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        raise ConfigError(f"field '{name}': must be a finite number {'>=' if zero_ok else '>'} 0; got {value}")


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """A dataclass config as a JSON-ready dict (tuples become lists), for summaries and run configs."""
    out = dataclasses.asdict(cfg)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}
