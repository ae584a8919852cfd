"""Config loading shared by every stage: YAML file < explicit flags, unknown keys rejected, one-line errors.

Usage in a stage (configs are frozen dataclasses validated in `__post_init__`):

    cfg = resolve_config(DapoConfig, config_path, eps_high=eps_high, group_size=None)

Flags left at None mean "not given" and do not override the file. A field that is also a flag says so once,
with its help: `samples: int = flag(1, "Samples per task.")`; the CLI builds the command's option from it.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from swerl_cli.core.errors import ConfigError, UsageError

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


# A config is a few dozen values; aliases that expand to more than this are refused (a "billion laughs" document
# is a few hundred bytes whose aliases expand to 10^9 values: every later use of it would hang).
MAX_YAML_VALUES = 100_000
# The longest value a config error echoes, in characters (a 38 KB value would be a 38 KB error line).
MAX_ECHO = 80


def cut(text: str, limit: int = MAX_ECHO) -> str:
    """`text` cut to about `limit` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[: max(limit - 20, 10)]}... ({len(text)} characters)"


def short(value: Any, limit: int = MAX_ECHO) -> str:
    """`repr(value)` cut to about `limit` characters (a config error echoes a value, never a whole 38 KB one)."""
    return cut(repr(value), limit)


def _expanded_size(root: Any, limit: int) -> int:
    """The number of values a composed YAML node stands for with every alias expanded (each shared node counted
    once per use), computed once per node; stops counting at `limit`."""
    import yaml

    sizes: dict[int, int] = {}
    order, stack = [], [root]
    while stack:  # children before parents, without recursion (a deep document must not overflow the stack)
        node = stack.pop()
        if id(node) in sizes:
            continue
        sizes[id(node)] = -1
        order.append(node)
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(x for kv in node.value for x in kv)
    for node in reversed(order):
        kids = node.value if isinstance(node, yaml.SequenceNode) else []
        if isinstance(node, yaml.MappingNode):
            kids = [x for kv in node.value for x in kv]
        sizes[id(node)] = min(limit + 1, 1 + sum(max(sizes[id(k)], 1) for k in kids))
    return sizes[id(root)]


def _parse_yaml(text: str, source: Path) -> Any:
    """Compose the document, refuse an alias bomb, then build the Python values."""
    loader = _loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, MAX_YAML_VALUES) > MAX_YAML_VALUES:
            raise ConfigError(
                f"{source}: its YAML aliases expand to more than {MAX_YAML_VALUES:,} values (an alias bomb?); "
                "write the values out"
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; a missing file or a non-mapping is a one-line ConfigError."""
    import yaml

    p = Path(path)
    try:
        data = _parse_yaml(p.read_text(encoding="utf-8"), p)  # a SafeLoader subclass
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
        raise ConfigError(f"{where}: not valid YAML: {cut(str(getattr(e, 'problem', None) or e), 200)}") from None
    except RecursionError:
        raise ConfigError(f"{p}: YAML nested too deeply") from None
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
            if not math.isfinite(value):
                raise ConfigError(f"{source}: field '{name}': must be a finite number; got {value}")
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
    raise ConfigError(f"{source}: field '{name}': expected {want}, got {short(value)}")


def resolve_config(cls: type[C], path: str | Path | None = None, /, **flags: Any) -> C:
    """Build `cls` from defaults < YAML file at `path` < flags that are not None. A config class may define
    `flatten_sections(data, source) -> data`, which turns the YAML mapping's sections into its flat fields first
    (`CollectConfig`: `policy: {name: vllm, tensor_parallel_size: 2}`)."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = field_types(cls)
    fields = {f.name for f in init_fields(cls)}
    values: dict[str, Any] = {}
    given: set[str] = set()
    if path is not None:
        source = str(path)
        data = load_yaml(path)
        flatten = getattr(cls, "flatten_sections", None)  # a config whose YAML may group fields in sections
        for key, value in (flatten(data, source) if flatten is not None else data).items():
            name = str(key).replace("-", "_")
            if name not in fields:
                close = ", ".join(sorted(f for f in fields if f[:3] == name[:3])) or "see the docs"
                raise ConfigError(f"{source}: unknown field {short(str(key))} (known fields like it: {close})")
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
        e.args = (cut(str(e), 400),)  # a validator may echo a whole value
        # The rule of docs/cli.md: a bad flag value is a usage error (exit 2), a bad config-file value exit 3.
        named = set(re.findall(r"field '([a-z_0-9]+)'", str(e)))
        if (named and named <= given) or (not named and path is None):
            raise UsageError(f"bad flag value: {e}") from None
        if path is not None and not str(e).startswith(str(path)):
            raise ConfigError(f"{path}: {e}") from None
        raise


def init_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The parameters of config class `cls`'s constructor, in declaration order: its init fields and its `InitVar`s
    (values a config takes and keeps in another form: `CollectConfig`'s policy options, kept as one section)."""
    hints = typing.get_type_hints(cls)
    regular = {f.name for f in dataclasses.fields(cls)}
    declared: dict[str, dataclasses.Field[Any]] = getattr(cls, "__dataclass_fields__")  # noqa: B009
    return [
        f
        for f in declared.values()
        if f.init and (f.name in regular or isinstance(hints.get(f.name), dataclasses.InitVar))
    ]


def field_types(cls: type) -> dict[str, Any]:
    """The type hints of config class `cls`, an `InitVar[T]` as its `T`."""
    return {k: v.type if isinstance(v, dataclasses.InitVar) else v for k, v in typing.get_type_hints(cls).items()}


# The dataclass-field metadata key under which a field's `Flag` is kept.
FLAG = "swerl.flag"


@dataclasses.dataclass(frozen=True, slots=True)
class Flag:
    """How a config field appears on the command line: its help, and where needed a metavar and explicit names
    (`("--model", "-m")`, `("--mask-format-errors/--train-format-errors",)`); by default `--field-name`. With
    `parse`, the flag takes one string that `parse` turns into the field's value (`--solve-rate 0.2:0.8`)."""

    help: str
    metavar: str | None = None
    names: tuple[str, ...] = ()
    parse: Callable[[str], Any] | None = None


def flag(
    default: Any,
    help: str | Flag,
    *,
    metavar: str | None = None,
    names: tuple[str, ...] = (),
    parse: Callable[[str], Any] | None = None,
) -> Any:
    """A dataclass field that is also a flag of the commands built on its config, its help declared here only (or
    in a `Flag` two configs share: `registry: str | None = flag(None, REGISTRY_FLAG)`)."""
    spec = help if isinstance(help, Flag) else Flag(help, metavar, names, parse)
    return dataclasses.field(default=default, metadata={FLAG: spec})


def flag_fields(cls: type) -> list[tuple[dataclasses.Field[Any], Flag]]:
    """The flag fields of config class `cls` in help order: the most derived class's fields first (a field it
    redeclares counts as its own), then each base class's, each in declaration order."""
    fields = {f.name: f for f in (*dataclasses.fields(cls), *init_fields(cls))}
    names: dict[str, None] = {}
    for klass in cls.__mro__:
        names.update(dict.fromkeys(klass.__dict__.get("__annotations__", {})))
    return [(fields[n], fields[n].metadata[FLAG]) for n in names if n in fields and FLAG in fields[n].metadata]


def check_positive(name: str, value: float, *, zero_ok: bool = False) -> None:
    """A finite number > 0 (>= 0 with `zero_ok`), else a ConfigError naming the field (nan and inf included)."""
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        raise ConfigError(f"field '{name}': must be a finite number {'>=' if zero_ok else '>'} 0; got {value}")


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """A dataclass config as a JSON-ready dict (tuples become lists), for summaries and run configs."""
    out = dataclasses.asdict(cfg)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}
