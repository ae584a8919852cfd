"""The grading guard: what is set aside, how the signed result is read, how failures are counted, and whose fault a
run without a result is (docs/grading.md). The end-to-end cases run the toy task on the real engine."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from swerl_cli.grading import infra
from swerl_cli.grading.grade import GradeConfig, grade_patch
from swerl_cli.grading.guard import GuardRun, _parse
from swerl_cli.grading.verdict import verdict
from swerl_cli.streams.records import Task


def test_test_infrastructure_by_name_and_by_runner_section() -> None:
    infra_paths = [
        "conftest.py", "src/pkg/conftest.py", "tests/helpers.py", "pkg/test_x.py", "pkg/x_test.py", "pytest.ini",
        "tox.ini", "sitecustomize.py", "lib/usercustomize.py", "evil.pth", "x.dist-info/entry_points.txt",
        "pkg.egg-info/entry_points.txt", "__pycache__/conftest.cpython-311-pytest-7.2.1.pyc", "bin/test",
        "testing/util.py",
    ]  # fmt: skip
    assert [p for p in infra_paths if not infra.is_infra(p)] == []
    assert [p for p in ("pkg/core.py", "setup.py", "pkg/testsuite.py", "docs/conf.py") if infra.is_infra(p)] == []
    base = '[project]\nname = "x"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    assert infra.runner_sections(base) == infra.runner_sections(base.replace('name = "x"', 'name = "y"'))
    assert infra.runner_sections(base) != infra.runner_sections(base.replace('"-q"', '"-q -p evil"'))
    cfg = "[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n"
    assert infra.runner_sections(cfg) == {"tool:pytest": "addopts = -q\n"}
    rename = (
        "diff --git a/tests/t.py b/tests/off.txt\nsimilarity index 100%\n"
        "rename from tests/t.py\nrename to tests/off.txt\n"
    )
    assert sorted(infra.all_paths(rename)) == ["tests/off.txt", "tests/t.py"]


def _lines(*msgs: dict) -> bytes:
    head = json.dumps({"exit_code": 1, "timed_out": False, "duration_s": 0.5})
    return "\n".join([head, *(json.dumps({**m, "n": i + 1}) for i, m in enumerate(msgs))]).encode()


def test_result_parsing_counts_phases_and_refuses_injected_lines() -> None:
    run = GuardRun(output="", verified=True)
    _parse(
        _lines(
            {"t": "hello"},
            {"t": "test", "id": "t.py", "when": "collect", "st": "ERROR"},
            {"t": "test", "id": "a.py::setup_err", "when": "setup", "st": "ERROR"},
            {"t": "test", "id": "a.py::fail_then_td", "when": "call", "st": "FAILED"},
            {"t": "test", "id": "a.py::fail_then_td", "when": "teardown", "st": "ERROR"},
            {"t": "test", "id": "a.py::pass_then_td", "when": "call", "st": "PASSED"},
            {"t": "test", "id": "a.py::pass_then_td", "when": "teardown", "st": "ERROR"},
            {"t": "test", "id": "a.py::ok", "when": "call", "st": "PASSED"},
            {"t": "end", "exit": 1},
        ),
        run,
    )
    assert run.problem() is None
    assert run.statuses == {
        "t.py": "ERROR",
        "a.py::setup_err": "ERROR",
        "a.py::fail_then_td": "ERROR",
        "a.py::pass_then_td": "ERROR",
        "a.py::ok": "PASSED",
    }
    injected = GuardRun(output="", verified=True)
    _parse(
        _lines({"t": "hello"}) + b'\n{"t": "test", "id": "a.py::ok", "when": "call", "st": "PASSED", "n": 7}', injected
    )
    assert injected.broken
    assert injected.problem() == "results_untrusted"
    twice = GuardRun(output="", verified=True)
    _parse(_lines({"t": "hello"}, {"t": "hello"}, {"t": "end", "exit": 0}), twice)
    assert twice.problem() == "results_untrusted"
    crashed = GuardRun(output="", verified=True)
    _parse(_lines({"t": "hello"}, {"t": "test", "id": "a.py::ok", "when": "call", "st": "PASSED"}), crashed)
    assert crashed.problem() == "tests_crashed"
    found = GuardRun(output="", verified=True)
    _parse(_lines({"t": "hello"}, {"t": "finding", "what": "replaced: builtins.input"}, {"t": "end", "exit": 0}), found)
    assert found.problem() == "results_untrusted"
    assert found.problem(frozenset({"replaced: builtins.input"})) == "no_results"  # the task's own doing: no result
    assert GuardRun(output="SWERL-GUARD-RESULT /tmp/x y\n").problem() == "results_untrusted"  # unsigned
    assert GuardRun(output="").problem() == "no_results"


def test_truncated_ids_match_the_harness_key() -> None:
    status = {"t.py::f[a b]": "PASSED", "t.py::f[a c]": "PASSED", "t.py::f[ab]": "FAILED"}
    assert verdict(status, ["t.py::f[a"], [])[0]  # the harness's key: the id up to its first space
    assert not verdict({**status, "t.py::f[a d]": "FAILED"}, ["t.py::f[a"], [])[0]  # disagreeing: a failure


MORE = """import pytest


@pytest.fixture
def broken_setup():
    raise RuntimeError("setup")


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")


def test_setup_error(broken_setup):
    pass


def test_fail_then_teardown_error(broken_teardown):
    assert False


def test_pass_then_teardown_error(broken_teardown):
    pass
"""


def _new_file(path: str, text: str) -> str:
    body = "".join("+" + line + "\n" for line in text.splitlines())
    n = len(text.splitlines())
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{n} @@\n{body}"


@pytest.mark.docker
def test_collection_setup_teardown_errors_and_missing_tests_fail_both_lists(toy_t: Task) -> None:
    more = ["tests/test_more.py::" + n for n in ("test_setup_error", "test_fail_then_teardown_error")]
    task = replace(
        toy_t,
        test_patch=toy_t.test_patch
        + _new_file("tests/test_more.py", MORE)
        + _new_file("tests/test_bad.py", "def (:\n"),
        test_cmd=toy_t.test_cmd + " --continue-on-collection-errors tests/test_more.py tests/test_bad.py",
        FAIL_TO_PASS=[
            *toy_t.FAIL_TO_PASS,
            "tests/test_more.py::test_pass_then_teardown_error",
            "tests/test_bad.py::test_x",
        ],
        PASS_TO_PASS=[*toy_t.PASS_TO_PASS, *more, "tests/test_calc.py::test_not_there"],
    )
    g = grade_patch(task, toy_t.patch, GradeConfig(), "pytest-guard-failures")
    assert (g["status"], g["reason"], g["log_parser"]) == ("unresolved", None, "guard"), (g["error"], g["log_tail"])
    tests = g["tests"]
    assert sorted(tests["FAIL_TO_PASS"]["failure"]) == [
        "tests/test_bad.py::test_x",  # collection error of its file
        "tests/test_more.py::test_pass_then_teardown_error",  # error at teardown
    ]
    assert sorted(tests["PASS_TO_PASS"]["failure"]) == sorted([*more, "tests/test_calc.py::test_not_there"])
    assert tests["status"]["tests/test_more.py::test_fail_then_teardown_error"] == "ERROR"
    assert tests["status"]["tests/test_more.py::test_setup_error"] == "ERROR"
    assert tests["status"]["tests/test_bad.py"] == "ERROR"
    assert sorted(tests["FAIL_TO_PASS"]["success"]) == sorted(toy_t.FAIL_TO_PASS)


@pytest.mark.docker
def test_run_without_results_is_the_patchs_fault_only_when_the_control_run_has_results(toy_t: Task) -> None:
    hang = (
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,4 @@\n"
        "+import time\n+time.sleep(600)\n def add(a, b):\n     return a - b\n"
    )
    g = grade_patch(toy_t, hang, GradeConfig(timeout_s=30), "pytest-guard-hang")
    assert (g["status"], g["reward"], g["reason"]) == ("unresolved", 0.0, "timeout"), (g["error"], g["log_tail"])
    assert g["control"]["problem"] is None
    task_hangs = replace(toy_t, test_cmd="sleep 600", instance_id="toy-hangs")
    g = grade_patch(task_hangs, toy_t.patch, GradeConfig(timeout_s=3), "pytest-guard-task-hang")
    assert (g["status"], g["reward"]) == ("error", None)
    assert "cannot be graded" in g["error"]
    assert g["control"]["problem"] == "timeout"


def test_report_summary_lists_reasons_and_set_aside_patches() -> None:
    from swerl_cli.grading.summary import GradeSummary

    s = GradeSummary()
    s.add({"id": "a", "patch": "x", "grade": {"status": "unresolved", "reason": "tests_crashed", "set_aside": []}})
    s.add({"id": "b", "patch": "x", "grade": {"status": "unresolved", "reason": None, "set_aside": ["conftest.py"]}})
    s.add({"id": "c", "patch": "x", "grade": {"status": "resolved"}})
    out = s.to_json()
    assert out["unresolved_reason_ids"] == {"tests_crashed": ["a"]}
    assert out["set_aside_ids"] == ["b"]
    assert (out["unresolved_instances"], out["resolved_instances"], out["error_instances"]) == (2, 1, 0)


HONEST_RUNTIME = """import asyncio
import collections
import types
from concurrent.futures import ThreadPoolExecutor


@types.coroutine
def _tick():
    yield


async def _main():
    await asyncio.sleep(0)
    await _tick()
    return 3


def test_asyncio_and_types_coroutine():
    assert asyncio.run(_main()) == 3


def test_namedtuple_defaults_and_a_thread_pool_that_imports():
    Point = collections.namedtuple("Point", "x y", defaults=(0,))
    with ThreadPoolExecutor(2) as pool:
        names = list(pool.map(lambda m: __import__(m).__name__, ["json", "decimal", "fractions"]))
    assert Point(1).y == 0 and names == ["json", "decimal", "fractions"]
"""


@pytest.mark.docker
def test_honest_runtime_habits_are_no_finding(toy_t: Task) -> None:
    """What honest code does at run time that the audit hook watches by target or thread: asyncio's import runs
    `types.coroutine`, which sets a standard-library generator's `__code__` (flags only); namedtuple sets its
    `__new__`'s defaults; a thread pool imports (and may compile) modules."""
    ids = [
        "tests/test_honest_rt.py::" + n
        for n in ("test_asyncio_and_types_coroutine", "test_namedtuple_defaults_and_a_thread_pool_that_imports")
    ]
    task = replace(
        toy_t,
        test_patch=toy_t.test_patch + _new_file("tests/test_honest_rt.py", HONEST_RUNTIME),
        test_cmd=toy_t.test_cmd + " tests/test_honest_rt.py",
        PASS_TO_PASS=[*toy_t.PASS_TO_PASS, *ids],
    )
    g = grade_patch(task, toy_t.patch, GradeConfig(), "pytest-guard-honest-rt")
    assert (g["status"], g["reward"]) == ("resolved", 1.0), (g["reason"], g["audit"], g["log_tail"][-1500:])
    assert g["audit"]["findings"] == []
