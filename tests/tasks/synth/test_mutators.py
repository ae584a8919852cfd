"""Each mutator makes the intended one-line change and a module that still parses; nothing outside functions."""

from __future__ import annotations

import ast

import pytest

from swerl_cli.tasks.synth.mutators import MUTATORS, mutations

SRC = '''"""A module."""
LIMIT = 10 + 1


def f(a, b, items, n):
    if a < b and not items:
        return a + b
    total = 0
    for i in range(len(items) - 1):
        total += items[i] * 2
    if total > LIMIT:
        return None
    label = f"{a + 1}"
    if a is not None:
        return max(total, a)
    return items[1:n]


class Box:
    size = 3 * 4

    def has(self, x):
        return x in self.data or (x == 0)
'''


def changes(kind: str) -> set[tuple[str, str, str]]:
    return {(m.function, m.old, m.new) for m in mutations("m.py", SRC, (kind,))}


# kind | function | line before | line after (`(removed)`: the lines are gone)
CASES = """
cmp_flip | f | if a < b and not items: | if a <= b and not items:
cmp_flip | f | if total > LIMIT: | if total >= LIMIT:
cmp_flip | f | if a is not None: | if a is None:
cmp_flip | Box.has | return x in self.data or (x == 0) | return x not in self.data or (x == 0)
op_flip | f | return a + b | return a - b
op_flip | f | total += items[i] * 2 | total -= items[i] * 2
op_flip | f | total += items[i] * 2 | total += items[i] // 2
bool_flip | f | if a < b and not items: | if a < b or not items:
bool_flip | f | if a < b and not items: | if a < b and items:
off_by_one | f | total = 0 | total = 1
off_by_one | f | for i in range(len(items) - 1): | for i in range(len(items) - 2):
off_by_one | f | total += items[i] * 2 | total += items[i + 1] * 2
off_by_one | f | return items[1:n] | return items[1:n - 1]
drop_cond | f | if a < b and not items: | if not items:
drop_cond | Box.has | return x in self.data or (x == 0) | return (x == 0)
drop_if | f | if total > LIMIT: / return None | (removed)
swap_args | f | return max(total, a) | return max(a, total)
"""


@pytest.mark.parametrize(("kind", "function", "old", "new"), [ln.split(" | ") for ln in CASES.strip().splitlines()])
def test_each_mutator_makes_its_change(kind: str, function: str, old: str, new: str) -> None:
    assert (function, old, "" if new == "(removed)" else new) in changes(kind)


def test_every_mutation_parses_differs_and_changes_one_place() -> None:
    found = mutations("m.py", SRC)
    assert {m.kind for m in found} == set(MUTATORS)
    before = SRC.splitlines()
    for m in found:
        tree = ast.parse(m.source)  # a valid module
        assert ast.dump(tree) != ast.dump(ast.parse(SRC))
        after = m.source.splitlines()
        if m.kind == "drop_if":
            assert len(before) - len(after) == 2
        else:
            assert len(after) == len(before)
            assert [i for i, (x, y) in enumerate(zip(before, after, strict=True)) if x != y] == [m.line - 1]


def test_module_level_code_class_bodies_and_fstrings_are_left_alone() -> None:
    found = mutations("m.py", SRC)
    lines = {m.line for m in found}
    assert 2 not in lines  # LIMIT = 10 + 1 runs at import
    assert SRC.splitlines().index("    size = 3 * 4") + 1 not in lines
    assert not any('f"{a' in m.old for m in found)  # the f-string's `a + 1`
    assert not any(m.new.endswith("- 0):") for m in found)  # `x - 1` never becomes `x - 0`


def test_unparsable_source_gives_nothing() -> None:
    assert mutations("bad.py", "def f(:\n    pass\n") == []
