"""A small, safe expression language over JSON records, compiled to Python closures (no `eval`).

The grammar and the parser are in parse.py.

Semantics, chosen so a filter never crashes half-way through a stream:
- a PATH (`grade.status`, `stats.turns`) follows nested objects; a missing field, or a step through a
  non-object, is `null`;
- `==`/`!=` compare JSON values: `true` never equals `1`, ints equal floats of the same value;
- `<`, `<=`, `>`, `>=` are true only when both sides are numbers (not bools) or both strings; any other mix is
  false (so `stats.turns < 40` is false for a record without `stats.turns`);
- `a in [x, y]` is list membership with `==`; `a in b` with two strings is substring; otherwise false;
- a bare operand used as a condition is true when it is `true`, a non-zero number or a non-empty
  string/array/object.
Example: `compile_expr('stats.turns < 40 and grade.status == "resolved"')({"stats": {"turns": 3}, ...})`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swerl_cli.filtering.parse import Parser

Getter = Callable[[dict], Any]
Predicate = Callable[[dict], bool]


def compile_expr(text: str) -> Predicate:
    """Compile a `--where` expression into `predicate(record_dict) -> bool`; syntax errors are ConfigError."""
    return _predicate(Parser(text).parse())


def _is_num(v: Any) -> bool:
    t = type(v)
    return t is int or t is float


def _json_eq(a: Any, b: Any) -> bool:
    """JSON equality: bools are not numbers, ints equal floats of the same value, containers deeply."""
    if type(a) is bool or type(b) is bool:
        return a is b
    if _is_num(a) and _is_num(b):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_eq(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _truthy(v: Any) -> bool:
    if v is None or v is False:
        return False
    if v is True:
        return True
    return bool(v)


def path_getter(path: str) -> Getter:
    """A fast getter for a dotted path over nested dicts; missing (or non-object steps) gives None."""
    parts = path.split(".")
    if len(parts) == 1:
        (a,) = parts
        return lambda o: o.get(a)
    if len(parts) == 2:
        a, b = parts

        def get2(o: dict) -> Any:
            v = o.get(a)
            return v.get(b) if type(v) is dict else None

        return get2

    def get_n(o: dict) -> Any:
        v: Any = o
        for p in parts:
            if type(v) is not dict:
                return None
            v = v.get(p)
        return v

    return get_n


def _value(node: tuple) -> Getter:
    if node[0] == "lit":
        v = node[1]
        return lambda o: v
    if node[0] == "path":
        return path_getter(node[1])
    pred = _predicate(node)  # a parenthesised condition used as a value: true/false
    return lambda o: pred(o)


_ORDER = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _compare(op: str, left: tuple, right: tuple) -> Predicate:
    lget = _value(left)
    if right[0] == "lit" and left[0] != "lit":
        fast = _compare_literal(op, lget, right[1])
        if fast is not None:
            return fast
    rget = _value(right)
    if op == "==":
        return lambda o: _json_eq(lget(o), rget(o))
    if op == "!=":
        return lambda o: not _json_eq(lget(o), rget(o))
    if op == "in":
        return lambda o: _contains(rget(o), lget(o))
    order = _ORDER[op]

    def ordered(o: dict) -> bool:
        a, b = lget(o), rget(o)
        if (_is_num(a) and _is_num(b)) or (type(a) is str and type(b) is str):
            return order(a, b)
        return False

    return ordered


def _compare_literal(op: str, get: Getter, lit: Any) -> Predicate | None:
    """Specialised closures for `path OP literal`, the hot case in `swerl filter --where`."""
    if op in ("==", "!=") and (lit is None or type(lit) is bool):
        if op == "==":
            return lambda o: get(o) is lit
        return lambda o: get(o) is not lit
    if op in ("==", "!=") and type(lit) is str:
        if op == "==":
            return lambda o: get(o) == lit
        return lambda o: get(o) != lit
    if op in _ORDER and _is_num(lit):
        if op == "<":

            def lt(o: dict) -> bool:
                v = get(o)
                t = type(v)
                return (t is int or t is float) and v < lit

            return lt
        order = _ORDER[op]

        def num_order(o: dict) -> bool:
            v = get(o)
            t = type(v)
            return (t is int or t is float) and order(v, lit)

        return num_order
    if op in _ORDER and type(lit) is str:
        order = _ORDER[op]
        return lambda o: (type(v := get(o)) is str) and order(v, lit)
    if op == "in" and type(lit) is list and all(type(x) is str for x in lit):
        members = frozenset(lit)
        return lambda o: type(v := get(o)) is str and v in members
    return None


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, list):
        return any(_json_eq(item, x) for x in container)
    if type(container) is str and type(item) is str:
        return item in container
    return False


def _chain(kind: str, preds: list[Predicate]) -> Predicate:
    """`a and b and ...` / `a or b or ...`, short-circuit, flat (a chain of 10,000 is no deeper than one of 2)."""
    if len(preds) == 2:
        a, b = preds
        return (lambda o: a(o) and b(o)) if kind == "and" else (lambda o: a(o) or b(o))
    if kind == "and":
        return lambda o: all(p(o) for p in preds)
    return lambda o: any(p(o) for p in preds)


def _predicate(node: tuple) -> Predicate:
    kind = node[0]
    if kind in ("and", "or"):
        return _chain(kind, [_predicate(n) for n in node[1:]])
    if kind == "not":
        a = _predicate(node[1])
        return lambda o: not a(o)
    if kind == "cmp":
        return _compare(node[1], node[2], node[3])
    if kind == "truthy":
        get = _value(node[1])
        return lambda o: _truthy(get(o))
    get = _value(node)  # a bare literal/path reached through parentheses
    return lambda o: _truthy(get(o))
