"""Procedural bugs in function bodies, found with `ast` and applied as small text edits (docs/tasks.md, synth).

Each mutator proposes edits on one source line inside a function (methods and nested functions count as their
outermost function): the rest of the file keeps its exact text, so the bug (and the gold fix) is a one-line diff
except for `drop_if`, which removes a two-line guard. Every edit is checked: the new module parses and its tree
differs from the old one. Nodes inside f-strings are skipped (their positions are unreliable before Python 3.12).

| mutator | change |
| --- | --- |
| `cmp_flip` | `<` <-> `<=`, `>` <-> `>=`, `==` <-> `!=`, `in` <-> `not in`, `is` <-> `is not` |
| `op_flip` | `+` <-> `-`, `*` <-> `//`, `/` -> `*`, `%` -> `//`, `**` -> `*`, `<<` <-> `>>`, `&` <-> `|`, `^` -> `|` |
| `bool_flip` | `and` <-> `or`; `not x` -> `x` |
| `off_by_one` | an integer literal +1 or -1; an index or slice bound `i` -> `i + 1` / `i - 1` |
| `drop_cond` | one operand of `a and b` / `a or b` dropped |
| `drop_if` | an `if` guard with a one-statement body and no `else` removed |
| `swap_args` | the first two positional arguments of a call swapped |
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

MUTATORS = ("cmp_flip", "op_flip", "bool_flip", "off_by_one", "drop_cond", "drop_if", "swap_args")

# comparison -> (regex of its token in the gap between the operands, replacement)
_CMP = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.In: (r"\bin\b", "not in"),
    ast.NotIn: (r"\bnot\s+in\b", "in"),
    ast.Is: (r"\bis\b", "is not"),
    ast.IsNot: (r"\bis\s+not\b", "is"),
}
# arithmetic operator -> (its token, replacement token); the gap between two operands holds only that token
_OPS_SPEC = "Add + -, Sub - +, Mult * //, FloorDiv // *, Div / *, Mod % //, Pow ** *, LShift << >>, RShift >> <<, " \
    "BitAnd & |, BitOr | &, BitXor ^ |"  # fmt: skip
_OPS = {getattr(ast, name): (token, repl) for name, token, repl in (op.split() for op in _OPS_SPEC.split(", "))}


@dataclass(frozen=True, slots=True)
class Mutation:
    """One proposed bug: where it is, what it changes, and the module's new text."""

    path: str
    function: str  # the outermost enclosing function's qualified name, e.g. "Cache.get"
    kind: str
    line: int  # 1-based line of the edit
    old: str  # the line before the edit (stripped)
    new: str  # the line after the edit (stripped; "" when the edit removes lines)
    source: str  # the whole mutated module


@dataclass(frozen=True, slots=True)
class _Edit:
    kind: str
    line: int  # 1-based first line replaced
    end_line: int  # 1-based last line replaced
    start: int  # character column on `line`
    end: int  # character column on `end_line`
    text: str


def _cols(lines: list[str], node: ast.AST) -> tuple[int, int, int, int] | None:
    """(line, start char, end line, end char) of a node; None when unknown. ast columns count UTF-8 bytes."""
    lo, hi = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    ca, cb = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    if lo is None or hi is None or ca is None or cb is None:
        return None
    a = len(lines[lo - 1].encode()[:ca].decode(errors="replace"))
    b = len(lines[hi - 1].encode()[:cb].decode(errors="replace"))
    return lo, a, hi, b


def _segment(lines: list[str], node: ast.AST) -> str | None:
    c = _cols(lines, node)
    if c is None or c[0] != c[2]:
        return None
    return lines[c[0] - 1][c[1] : c[3]]


def _gap_edit(lines: list[str], kind: str, left: ast.AST, right: ast.AST, pattern: str, repl: str) -> _Edit | None:
    """Replace the operator token between two nodes on the same line."""
    lc, rc = _cols(lines, left), _cols(lines, right)
    if lc is None or rc is None or lc[2] != rc[0]:
        return None
    line, start, end = lc[2], lc[3], rc[1]
    m = re.search(pattern, lines[line - 1][start:end])
    if m is None:
        return None
    return _Edit(kind, line, line, start + m.start(), start + m.end(), repl)


def _replace(lines: list[str], kind: str, node: ast.AST, text: str) -> _Edit | None:
    c = _cols(lines, node)
    if c is None or c[0] != c[2]:
        return None
    return _Edit(kind, c[0], c[0], c[1], c[3], text)


def _paren_segment(lines: list[str], node: ast.AST) -> str | None:
    """A one-line node's text with the parentheses that wrap it: `(a or b)` for the `a or b` in `(a or b) and c`."""
    c = _cols(lines, node)
    if c is None or c[0] != c[2]:
        return None
    line, start, end = lines[c[0] - 1], c[1], c[3]
    while True:
        p = len(line[:start].rstrip()) - 1
        q = end + len(line[end:]) - len(line[end:].lstrip())
        if p < 0 or q >= len(line) or line[p] != "(" or line[q] != ")":
            return line[start:end]
        start, end = p, q + 1


def _cmp_flip(lines: list[str], node: ast.AST) -> Iterator[_Edit | None]:
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            left = node.left if i == 0 else node.comparators[i - 1]
            pattern, repl = _CMP[type(op)]
            yield _gap_edit(lines, "cmp_flip", left, node.comparators[i], pattern, repl)


def _op_flip(lines: list[str], node: ast.AST) -> Iterator[_Edit | None]:
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        token, repl = _OPS[type(node.op)]
        yield _gap_edit(lines, "op_flip", node.left, node.right, re.escape(token), repl)
    elif isinstance(node, ast.AugAssign) and type(node.op) in _OPS:
        token, repl = _OPS[type(node.op)]
        yield _gap_edit(lines, "op_flip", node.target, node.value, re.escape(token + "="), repl + "=")


def _bool_flip(lines: list[str], node: ast.AST) -> Iterator[_Edit | None]:
    if isinstance(node, ast.BoolOp):
        word, repl = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        yield _gap_edit(lines, "bool_flip", node.values[0], node.values[1], rf"\b{word}\b", repl)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _paren_segment(lines, node.operand)
        if inner is not None:
            yield _replace(lines, "bool_flip", node, inner)


def _off_by_one(lines: list[str], node: ast.AST, no_zero: bool) -> Iterator[_Edit | None]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        yield _replace(lines, "off_by_one", node, str(node.value + 1))
        if node.value > 0 and not (no_zero and node.value == 1):
            yield _replace(lines, "off_by_one", node, str(node.value - 1))
    elif isinstance(node, ast.Subscript):
        bounds = [node.slice.lower, node.slice.upper] if isinstance(node.slice, ast.Slice) else [node.slice]
        for b in bounds:
            if isinstance(b, (ast.Name, ast.Attribute, ast.Call)) and (seg := _segment(lines, b)) is not None:
                yield _replace(lines, "off_by_one", b, f"{seg} + 1")
                yield _replace(lines, "off_by_one", b, f"{seg} - 1")


def _drop_cond(lines: list[str], node: ast.AST) -> Iterator[_Edit | None]:
    if isinstance(node, ast.BoolOp):
        parts = [_paren_segment(lines, v) for v in node.values]
        if any(p is None for p in parts):
            return
        word = " and " if isinstance(node.op, ast.And) else " or "
        for i in range(len(parts)):
            yield _replace(lines, "drop_cond", node, word.join(str(p) for p in parts[:i] + parts[i + 1 :]))


def _drop_if(lines: list[str], node: ast.AST) -> Iterator[_Edit | None]:
    simple = (ast.Return, ast.Raise, ast.Continue, ast.Break, ast.Assign, ast.AugAssign, ast.Expr)
    if isinstance(node, ast.If) and not node.orelse and len(node.body) == 1 and isinstance(node.body[0], simple):
        if node.end_lineno is not None and node.end_lineno - node.lineno <= 1:
            indent = lines[node.lineno - 1][: node.col_offset]
            if not indent.strip():  # the `if` starts its line: remove whole lines
                yield _Edit("drop_if", node.lineno, node.end_lineno, 0, len(lines[node.end_lineno - 1]), "\0")


def _swap_args(lines: list[str], node: ast.AST) -> Iterator[_Edit | None]:
    if isinstance(node, ast.Call) and len(node.args) >= 2:
        a, b = node.args[0], node.args[1]
        if any(isinstance(x, ast.Starred) for x in (a, b)):
            return
        sa, sb, ca, cb = _segment(lines, a), _segment(lines, b), _cols(lines, a), _cols(lines, b)
        if sa is None or sb is None or ca is None or cb is None or ca[0] != cb[0] or sa == sb:
            return
        line = lines[ca[0] - 1]
        yield _Edit("swap_args", ca[0], ca[0], ca[1], cb[3], sb + line[ca[3] : cb[1]] + sa)


def _function_nodes(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(outermost function qualname, node) for every node in a function body (classes nest, f-strings skipped)."""

    def walk(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, ast.AST]]:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                yield from walk(stmt.body, f"{prefix}{stmt.name}.")
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + stmt.name
                stack: list[ast.AST] = list(stmt.body)
                while stack:
                    node = stack.pop()
                    if isinstance(node, ast.JoinedStr):
                        continue
                    yield name, node
                    stack.extend(ast.iter_child_nodes(node))

    yield from walk(tree.body, "")


def _apply(lines: list[str], e: _Edit) -> str:
    first, last = lines[e.line - 1], lines[e.end_line - 1]
    if e.text == "\0":  # remove whole lines (with their line ends)
        return "".join(lines[: e.line - 1] + lines[e.end_line :])
    return "".join([*lines[: e.line - 1], first[: e.start] + e.text + last[e.end :], *lines[e.end_line :]])


def mutations(path: str, source: str, kinds: tuple[str, ...] = MUTATORS) -> list[Mutation]:
    """Every valid mutation of `source` by the chosen mutators, in source order (duplicates removed)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines(keepends=True)
    before = ast.dump(tree)
    # a literal 1 that must not become 0 (`-0`, `x - 0`): negated, or the right operand of + or -
    no_zero = {id(n.operand) for n in ast.walk(tree) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub)}
    no_zero |= {
        id(n.right) for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub))
    }
    edits: list[tuple[str, _Edit]] = []
    for fn, node in _function_nodes(tree):
        for kind in kinds:
            if kind == "off_by_one":
                found = _off_by_one(lines, node, id(node) in no_zero)
            else:
                found = _GENERATORS[kind](lines, node)
            edits += [(fn, e) for e in found if e is not None]
    out: list[Mutation] = []
    seen: set[str] = set()
    for fn, e in sorted(edits, key=lambda fe: (fe[1].line, fe[1].start, fe[1].kind, fe[1].text)):
        new = _apply(lines, e)
        if new in seen:
            continue
        seen.add(new)
        try:
            if ast.dump(ast.parse(new)) == before:
                continue
        except SyntaxError:
            continue
        after = "" if e.text == "\0" else new.splitlines()[e.line - 1].strip()
        old = " / ".join(ln.strip() for ln in lines[e.line - 1 : e.end_line])
        out.append(Mutation(path, fn, e.kind, e.line, old, after, new))
    return out


_GENERATORS = {
    "cmp_flip": _cmp_flip,
    "op_flip": _op_flip,
    "bool_flip": _bool_flip,
    "drop_cond": _drop_cond,
    "drop_if": _drop_if,
    "swap_args": _swap_args,
}
