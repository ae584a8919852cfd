"""The keep rule (probe.judge), the candidate order, the split by function and the problem statement."""

from __future__ import annotations

from typing import Any

from swerl_cli.tasks.synth.mutators import mutations
from swerl_cli.tasks.synth.plan import assign_splits, function_key, order_candidates
from swerl_cli.tasks.synth.probe import judge
from swerl_cli.tasks.synth.statement import head_line, problem_statement, shows_line

PASSING = ["t.py::test_a", "t.py::test_b", "t.py::C::test_c"]


def grade(status: str = "unresolved", tests: dict[str, str] | None = None, code: int | None = 1) -> dict[str, Any]:
    return {"status": status, "tests": None if tests is None else {"status": tests}, "test_exit_code": code}


def test_a_mutant_that_fails_a_passing_test_is_kept_with_its_lists() -> None:
    g = grade(
        tests={"t.py::test_a": "FAILED", "t.py::test_b": "PASSED", "t.py::C::test_c": "ERROR", "t.py::x": "FAILED"}
    )
    assert judge(g, PASSING) == (["t.py::test_a", "t.py::C::test_c"], ["t.py::test_b"])


def test_rejections() -> None:
    all_pass = {t: "PASSED" for t in PASSING}
    assert judge(grade("resolved", all_pass, 0), PASSING) == "survived"
    assert judge(grade(tests={"t.py::test_a": "FAILED", "t.py::test_b": "PASSED"}), PASSING) == "import"  # one gone
    assert judge(grade(tests={**all_pass, "t.py": "ERROR"}), PASSING) == "import"  # a file failed to collect
    assert judge(grade("timeout", {}), PASSING) == "timeout"
    assert judge(grade("unresolved", {}, 2), PASSING) == "import"  # the suite ran and reported nothing
    assert judge(grade("error", None, None), PASSING) == "error"  # the sandbox failed
    assert judge(grade("error", None, 1), PASSING) == "error"  # the grader did not trust the run


MODULE = "\n".join(f"def f{i}(x):\n    return x + {i} if x > {i} else x - 1\n" for i in range(12))


def test_order_is_seeded_and_capped_per_function() -> None:
    muts = mutations("m.py", MODULE)
    a, b = order_candidates(muts, 3, 2), order_candidates(list(reversed(muts)), 3, 2)
    assert [m.source for m in a] == [m.source for m in b]  # the seed decides, not the input order
    assert a != order_candidates(muts, 4, 2)
    per_fn: dict[str, int] = {}
    for m in a:
        per_fn[function_key(m)] = per_fn.get(function_key(m), 0) + 1
    assert set(per_fn.values()) == {2}
    assert len(per_fn) == 12
    firsts = [m.kind for m in a[::2]]
    assert all(m.kind != n.kind for m, n in zip(a[::2], a[1::2], strict=True))  # mutators take turns inside a function
    assert len(set(firsts)) > 1


def test_split_never_shares_a_function_and_is_deterministic() -> None:
    fns = [f"m.py::f{i}" for i in range(20)]
    s = assign_splits(fns * 3, 0.25, 0)
    assert s == assign_splits(list(reversed(fns)), 0.25, 0)
    assert sum(v == "heldout" for v in s.values()) == 5
    assert set(s) == set(fns)
    assert s != assign_splits(fns, 0.25, 1)
    assert list(assign_splits(["a", "b"], 0.01, 0).values()).count("heldout") == 1  # at least one held out
    assert set(assign_splits(["a"], 0.5, 0).values()) == {"train"}  # never everything unless asked
    assert set(assign_splits(fns, 0.0, 0).values()) == {"train"}


LOG = """============================= test session starts ==============================
collected 3 items

t.py F.F                                                                 [100%]

=================================== FAILURES ===================================
____________________________________ test_a ____________________________________
t.py:3: in test_a
    assert f(2) == 3
m.py:2: in f
    return x - 1
E   assert 1 == 3
_________________________________ C.test_c[1-2] _________________________________
t.py:9: in test_c
    assert False
E   assert False
=========================== short test summary info ============================
FAILED t.py::test_a - assert 1 == 3
PASSED t.py::test_b
========================= 2 failed, 1 passed in 0.05s ==========================
"""


def test_problem_statement_names_the_test_and_shows_its_report_tail() -> None:
    assert head_line("t.py::C::test_c[1-2]") == "C.test_c[1-2]"
    text = problem_statement(["t.py::test_a", "t.py::C::test_c[1-2]"], LOG)
    assert text.startswith("The test `t.py::test_a` fails. Also failing: `t.py::C::test_c[1-2]`.")
    assert "E   assert 1 == 3" in text
    assert "t.py:3: in test_a" in text
    assert "assert False" not in text
    assert "short test summary" not in text
    other = problem_statement(["t.py::C::test_c[1-2]"], LOG)
    assert "E   assert False" in other
    assert "test_a" not in other
    assert "fails." in problem_statement(["t.py::gone"], LOG)  # no report: the id alone


def test_shows_line_matches_a_frame_of_the_report_only() -> None:
    text = problem_statement(["t.py::test_a"], LOG)
    assert shows_line(text, "t.py", 3)
    assert shows_line(text, "m.py", 2)  # the frame below the test: where the bug is
    assert not shows_line(text, "t.py", 30)  # another line
    assert not shows_line(text, "t.py", 4)
    assert not shows_line(text, "x/t.py", 3)  # another file with the same tail
    assert shows_line("  pkg/sub/t.py:3: in f", "sub/t.py", 3)  # a frame printed with a longer path
    assert not shows_line("pkg/subt.py:3: in f", "t.py", 3)
