"""The --where expression language: semantics and syntax errors with columns."""

from __future__ import annotations

import pytest

from swerl_cli.core.errors import ConfigError
from swerl_cli.filtering.expr import compile_expr

REC = {
    "instance_id": "t1",
    "repo": "acme/widgets",
    "stats": {"turns": 12, "tokens_total": 4096, "wall_s": 3.5},
    "grade": {"status": "resolved", "resolved": True, "reward": 1.0},
    "tags": ["x", "y"],
    "one": 1,
    "flag": True,
    "nothing": None,
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('stats.turns < 40 and grade.status == "resolved"', True),
        ("stats.turns < 12", False),
        ("stats.turns <= 12", True),
        ("stats.turns >= 12.0", True),
        ("stats.turns > 11 and stats.turns != 13", True),
        ("stats.wall_s > 3", True),
        ("grade.resolved", True),
        ("not grade.resolved", False),
        ("grade.resolved == true", True),
        ("one == true", False),  # a bool is not a number
        ("flag == 1", False),
        ("one == 1.0", True),
        ("missing.field == null", True),
        ("missing.field", False),
        ("nothing == null", True),
        ("stats.turns.deeper == null", True),  # stepping through a number yields null
        ("missing < 3", False),  # ordering with null is false
        ('stats.turns < "a"', False),  # ordering mixed types is false
        ('repo > "a"', True),  # strings order lexicographically
        ('repo in ["acme/widgets", "b"]', True),
        ('repo not in ["acme/widgets"]', False),
        ('"widg" in repo', True),
        ('"x" in tags', True),
        ("1 in tags", False),
        ("stats.turns in [11, 12.0]", True),
        ("(stats.turns < 5 or grade.reward >= 1) and not (repo == 'zzz')", True),
        ("not not flag", True),
        ("a == 1 or b == 2 or one == 1", True),
        ("true and false or true", True),  # and binds tighter than or
        ("false and false or false", False),
        ('grade.status == "res\\"olved"', False),
        ("-1 < one", True),
        ("1e1 > stats.turns", False),
    ],
)
def test_compile_expr_evaluates(expr: str, expected: bool) -> None:
    assert compile_expr(expr)(REC) is expected


@pytest.mark.parametrize(
    ("expr", "column", "fragment"),
    [
        ("", 1, "empty expression"),
        ("stats.turns <", 14, "expected a field"),
        ("a == = b", 6, "unexpected character"),
        ("(a == 1", 8, "expected ')'"),
        ("a b", 3, "expected 'and', 'or' or the end"),
        ("a == $", 6, "unexpected character '$'"),
        ("a in [b]", 7, "list items must be literals"),
        ("a in [1 2]", 9, "expected ',' or ']'"),
        ('a == "open', 6, "unexpected character"),
    ],
)
def test_compile_expr_syntax_error_names_column(expr: str, column: int, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        compile_expr(expr)
    msg = str(info.value)
    assert f"column {column}:" in msg
    assert fragment in msg
    assert "\n" not in msg


def test_compile_expr_does_not_evaluate_python() -> None:
    with pytest.raises(ConfigError):
        compile_expr("__import__('os').system('true')")
