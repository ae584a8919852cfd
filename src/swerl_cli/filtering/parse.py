"""The `--where` language's syntax: tokens and a recursive-descent parser to a tuple tree (expr.py compiles it).

Grammar (lowest precedence first)::

    expr    := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare
    compare := operand (("==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not" "in") operand)?
    operand := NUMBER | STRING | true | false | null | PATH | "[" [operand ("," operand)*] "]" | "(" expr ")"

Trees: ("or"|"and", node, node, ...), ("not", node), ("cmp", op, left, right), ("truthy", node), ("lit", value),
("path", dotted).
Syntax errors are one ConfigError line with the column and a caret.
"""

from __future__ import annotations

import re
from typing import Any

from swerl_cli.core.errors import ConfigError

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


class Parser:
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
