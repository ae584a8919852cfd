"""A small, safe expression language over JSON records, compiled to Python closures (no `eval`).

Grammar (lowest precedence first)::

    expr    := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare
    compare := operand (("==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not" "in") operand)?
    operand := NUMBER | STRING | true | false | null | PATH | "[" [operand ("," operand)*] "]" | "(" expr ")"

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

import re
from collections.abc import Callable
from typing import Any

from swerl_cli.core.errors import ConfigError

Getter = Callable[[dict], Any]
Predicate = Callable[[dict], bool]

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
    | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,)
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "not", "in", "true", "false", "null"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}


def _tokenize(text: str) -> list[tuple[str, Any, int]]:
    """Split into (kind, value, column) tokens; columns are 1-based for error messages."""
    tokens: list[tuple[str, Any, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            col = pos + len(text[pos:]) - len(text[pos:].lstrip()) + 1
            raise _syntax(text, col, f"unexpected character {text[col - 1]!r}")
        col = m.start(m.lastgroup) + 1  # type: ignore[arg-type]
        kind = m.lastgroup
        raw = m.group(kind)  # type: ignore[arg-type]
        if kind == "num":
            value: Any = float(raw) if any(c in raw for c in ".eE") else int(raw)
            tokens.append(("lit", value, col))
        elif kind == "str":
            tokens.append(("lit", re.sub(r"\\(.)", lambda e: _ESCAPES.get(e.group(1), e.group(1)), raw[1:-1]), col))
        elif kind == "name" and raw in _KEYWORDS:
            if raw in ("true", "false", "null"):
                tokens.append(("lit", {"true": True, "false": False, "null": None}[raw], col))
            else:
                tokens.append(("kw", raw, col))
        elif kind == "name":
            tokens.append(("path", raw, col))
        else:
            tokens.append(("op", raw, col))
        pos = m.end()
    tokens.append(("end", None, len(text) + 1))
    return tokens


def _syntax(text: str, col: int, msg: str) -> ConfigError:
    """A one-line error quoting the expression (a long one: 60 characters either side of `col`)."""
    if len(text) > 160:
        lo, hi = max(col - 61, 0), col + 59
        text = f"{'...' if lo else ''}{text[lo:hi]}{'...' if hi < len(text) else ''} ({len(text)} characters)"
    return ConfigError(f"--where: column {col}: {msg} in {text!r}")


# Nesting ('(', '[', 'not') deeper than this is refused with one line: the parser and the compiled predicate
# recurse once per level, and Python's stack ends near 1,000. Chains (`a or b or ...`) are flat and not limited.
MAX_DEPTH = 100


class _Parser:
    """Recursive descent over the token list; each rule returns a node tuple."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0

    def nest(self) -> None:
        """Enter one more level of '(', '[' or 'not'; refuse past MAX_DEPTH."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _syntax(self.text, self.tokens[self.i - 1][2], f"nested more than {MAX_DEPTH} levels deep")

    def peek(self) -> tuple[str, Any, int]:
        return self.tokens[self.i]

    def take(self, kind: str, value: Any = None) -> bool:
        tok = self.tokens[self.i]
        if tok[0] == kind and (value is None or tok[1] == value):
            self.i += 1
            return True
        return False

    def fail(self, msg: str) -> ConfigError:
        kind, value, col = self.peek()
        found = "end of expression" if kind == "end" else repr(value)
        return _syntax(self.text, col, f"{msg}, found {found}")

    def parse(self) -> tuple:
        if self.peek()[0] == "end":
            raise _syntax(self.text, 1, "empty expression")
        node = self.or_()
        if self.peek()[0] != "end":
            raise self.fail("expected 'and', 'or' or the end")
        return node

    def or_(self) -> tuple:
        nodes = [self.and_()]
        while self.take("kw", "or"):
            nodes.append(self.and_())
        return nodes[0] if len(nodes) == 1 else ("or", *nodes)

    def and_(self) -> tuple:
        nodes = [self.not_()]
        while self.take("kw", "and"):
            nodes.append(self.not_())
        return nodes[0] if len(nodes) == 1 else ("and", *nodes)

    def not_(self) -> tuple:
        if self.take("kw", "not"):
            self.nest()
            node = ("not", self.not_())
            self.depth -= 1
            return node
        return self.compare()

    def compare(self) -> tuple:
        left = self.operand()
        kind, value, _ = self.peek()
        if kind == "op" and value in ("==", "!=", "<", "<=", ">", ">="):
            self.i += 1
            return ("cmp", value, left, self.operand())
        if self.take("kw", "in"):
            return ("cmp", "in", left, self.operand())
        if kind == "kw" and value == "not" and self.tokens[self.i + 1][:2] == ("kw", "in"):
            self.i += 2
            return ("not", ("cmp", "in", left, self.operand()))
        return ("truthy", left)

    def operand(self) -> tuple:
        kind, value, _ = self.peek()
        if kind == "lit":
            self.i += 1
            return ("lit", value)
        if kind == "path":
            self.i += 1
            return ("path", value)
        if self.take("op", "("):
            self.nest()
            node = self.or_()
            if not self.take("op", ")"):
                raise self.fail("expected ')'")
            self.depth -= 1
            return node
        if self.take("op", "["):
            self.nest()
            items: list[Any] = []
            if not self.take("op", "]"):
                while True:
                    item = self.operand()
                    if item[0] != "lit":
                        raise _syntax(self.text, self.tokens[self.i - 1][2], "list items must be literals")
                    items.append(item[1])
                    if self.take("op", "]"):
                        break
                    if not self.take("op", ","):
                        raise self.fail("expected ',' or ']'")
            self.depth -= 1
            return ("lit", items)
        raise self.fail("expected a field, a literal, '[' or '('")


def compile_expr(text: str) -> Predicate:
    """Compile a `--where` expression into `predicate(record_dict) -> bool`; syntax errors are ConfigError."""
    return _predicate(_Parser(text).parse())


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
