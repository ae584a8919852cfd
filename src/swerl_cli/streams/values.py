"""Located field access: a JSON value with its origin, the one type check of JSON fields, and errors that name
the file, line and field."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from swerl_cli.core.errors import InputError

_MISSING = object()
_NO_DEFAULT = object()


@dataclass(slots=True)
class Located:
    """A JSON value plus where it came from, so any later error can name its origin."""

    source: str
    line: int
    obj: Any

    def error(self, field: str | None, message: str) -> InputError:
        return InputError(self.source, self.line, field, message)


def short_json(value: Any, limit: int = 40) -> str:
    """A value as JSON, cut to `limit` characters, for error messages: `short_json([1, 2]) == "[1,2]"`."""
    import orjson

    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# The one type check of JSON fields (records and filter rules use it): `int` never accepts a bool, and `float`
# accepts ints (JSON has one number type).
_TYPE_CHECKS: dict[Any, Callable[[Any], bool]] = {
    bool: lambda v: type(v) is bool,
    int: lambda v: type(v) is int,
    float: lambda v: type(v) is int or type(v) is float,
    str: lambda v: type(v) is str,
    list: lambda v: type(v) is list,
    dict: lambda v: type(v) is dict,
}
_EXPECT_NAMES = {bool: "bool", int: "int", float: "number", str: "string", list: "array", dict: "object"}


def _instance_of(t: type) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, t)


def type_check(expected: type | tuple[type, ...]) -> tuple[Callable[[Any], bool], str]:
    """(predicate, name) for a JSON field type: `type_check(float)[0](1) is True`, its name is `"number"`."""
    types = expected if isinstance(expected, tuple) else (expected,)
    checks = [_TYPE_CHECKS.get(t) or _instance_of(t) for t in types]
    name = " or ".join(_EXPECT_NAMES.get(t, t.__name__) for t in types)
    if len(checks) == 1:
        return checks[0], name
    return (lambda v: any(c(v) for c in checks)), name


def wrong_type(expected_name: str, value: Any) -> str:
    """The message of every field type error: `expected int, got "3"`."""
    return f"expected {expected_name}, got {short_json(value)}"


def dict_at(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """`obj[key]` when it is a JSON object, else `{}`: optional sub-objects of rows swerl did not write.

    >>> dict_at({"info": {"a": 1}, "bad": 3}, "info"), dict_at({"bad": 3}, "bad")
    ({'a': 1}, {})
    """
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def list_at(obj: dict[str, Any], key: str) -> list[Any]:
    """`obj[key]` when it is a JSON array, else `[]`."""
    value = obj.get(key)
    return value if isinstance(value, list) else []


def get_path(obj: Any, path: str, default: Any = _NO_DEFAULT) -> Any:
    """Follow a dotted path through nested objects: `get_path({"a": {"b": 1}}, "a.b") == 1`."""
    cur = obj
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            if default is _NO_DEFAULT:
                raise KeyError(path)
            return default
    return cur


def require(loc: Located, path: str, expected: type | tuple[type, ...], *, optional: bool = False) -> Any:
    """Return the value at `path` checked against `expected` (see `type_check`), or raise a located InputError."""
    value = get_path(loc.obj, path, _MISSING)
    if value is _MISSING or (optional and value is None):
        if optional:
            return None
        raise loc.error(path, "missing")
    check, name = type_check(expected)
    if check(value):
        return value
    raise loc.error(path, wrong_type(name, value))
