"""Log parsers and v5 verdicts on crafted logs (no engine)."""

from __future__ import annotations

from swerl_cli.grading.evaluate import evaluate, suspicious
from swerl_cli.grading.logs import node_id, parse_junit, parse_pytest_log

LOG = """\
============================= test session starts ==============================
collected 9 items

t/test_a.py ..F.sxX                                                     [100%]
==================================== PASSES ====================================
___________________________________ test_ok ____________________________________
----------------------------- Captured stdout call -----------------------------
PASSED t/test_a.py::test_spoofed
=========================== short test summary info ============================
PASSED t/test_a.py::test_ok
PASSED t/test_a.py::test_p[a b - c]
PASSED t/test_a.py::test_p[\\xfc [x]]
stray output from a thread
SKIPPED [2] t/test_a.py:40: not on linux
SKIPPED t/test_a.py::test_sk - reason here
XFAIL t/test_a.py::test_xf - known bug
XPASS t/test_a.py::test_xp unexpected pass
ERROR t/test_a.py::test_err - RuntimeError: setup broke
ERROR t/test_b.py - ImportError: no module named x
FAILED t/test_a.py::test_bad - AssertionError: assert 1 == 2 - and more
FAILED t/test_a.py::TestC::test_m[1-2]
=========== 2 failed, 3 passed, 1 skipped, 1 xfailed, 1 xpassed in 0.1s ===========
PASSED t/test_a.py::test_outside
"""


def test_node_id_cuts_message_outside_brackets() -> None:
    assert node_id("t.py::f[a - b] - boom") == "t.py::f[a - b]"
    assert node_id("t.py::f unexpected pass") == "t.py::f"
    assert node_id("t.py - ImportError") == "t.py"
    assert node_id("t.py::f[[] - x") == "t.py::f[[]"


def test_parse_summary_section_only() -> None:
    m = parse_pytest_log(LOG)
    assert m == {
        "t/test_a.py::test_ok": "PASSED",
        "t/test_a.py::test_p[a b - c]": "PASSED",
        "t/test_a.py::test_p[\\xfc [x]]": "PASSED",
        "t/test_a.py::test_sk": "SKIPPED",
        "t/test_a.py::test_xf": "XFAIL",
        "t/test_a.py::test_xp": "XPASS",
        "t/test_a.py::test_err": "ERROR",
        "t/test_b.py": "ERROR",
        "t/test_a.py::test_bad": "FAILED",
        "t/test_a.py::TestC::test_m[1-2]": "FAILED",
    }


def test_colour_codes_and_progress_fallback() -> None:
    assert parse_pytest_log("\x1b[32m=== short test summary info ===\x1b[0m\n\x1b[32mPASSED\x1b[0m a.py::t\n") == {
        "a.py::t": "PASSED"
    }
    verbose = "a.py::t1 PASSED                  [ 50%]\na.py::t2[x y] FAILED            [100%]\n"
    assert parse_pytest_log(verbose) == {"a.py::t1": "PASSED", "a.py::t2[x y]": "FAILED"}


def test_teardown_error_after_pass_wins() -> None:
    log = "=== short test summary info ===\nPASSED a.py::t\nERROR a.py::t - teardown\n"
    assert parse_pytest_log(log) == {"a.py::t": "ERROR"}


def test_v5_verdicts_skip_xfail_file_error_and_truncated_ids() -> None:
    status = parse_pytest_log(LOG)
    f2p = [
        "t/test_a.py::test_ok",
        "t/test_a.py::test_sk",
        "t/test_a.py::test_xf",
        "t/test_b.py::test_x",
        "t/test_a.py::test_p[a",
        "t/test_a.py::test_p[ü [x]]",
    ]
    p2p = ["t/test_a.py::test_sk", "t/test_a.py::test_xp", "t/test_a.py::test_missing"]
    resolved, tests = evaluate(status, f2p, p2p)
    assert not resolved
    assert tests["FAIL_TO_PASS"]["success"] == [
        "t/test_a.py::test_ok",
        "t/test_a.py::test_xf",
        "t/test_a.py::test_p[a",
        "t/test_a.py::test_p[ü [x]]",
    ]
    assert tests["FAIL_TO_PASS"]["failure"] == ["t/test_a.py::test_sk", "t/test_b.py::test_x"]
    assert tests["PASS_TO_PASS"] == {
        "success": ["t/test_a.py::test_sk"],
        "failure": ["t/test_a.py::test_xp", "t/test_a.py::test_missing"],
    }
    assert tests["status"]["t/test_b.py::test_x"] == "ERROR"
    assert evaluate(status, ["t/test_a.py::test_ok"], [])[0] is True


def test_empty_or_contradictory_maps_are_errors() -> None:
    assert "did not run" in suspicious({}, 2)
    assert "cannot be trusted" in suspicious({"a::t": "PASSED"}, 1)
    assert suspicious({"a::t": "FAILED"}, 1) is None
    assert suspicious({"a::t": "PASSED"}, 0) is None


JUNIT1 = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_x" name="test_ok" file="tests/test_x.py" line="1" time="0"/>
<testcase classname="tests.test_x.TestC" name="test_m[a b]" file="tests/test_x.py" line="5" time="0">
<failure message="boom">x</failure></testcase>
<testcase classname="tests.test_x" name="test_s" file="tests/test_x.py"><skipped type="pytest.skip"/></testcase>
<testcase classname="tests.test_x" name="test_xf" file="tests/test_x.py"><skipped type="pytest.xfail"/></testcase>
<testcase classname="tests.test_x" name="test_e" file="tests/test_x.py"><error message="failed on setup"/></testcase>
</testsuite></testsuites>"""


def test_parse_junit_xunit1_rebuilds_node_ids() -> None:
    assert parse_junit(JUNIT1) == {
        "tests/test_x.py::test_ok": "PASSED",
        "tests/test_x.py::TestC::test_m[a b]": "FAILED",
        "tests/test_x.py::test_s": "SKIPPED",
        "tests/test_x.py::test_xf": "XFAIL",
        "tests/test_x.py::test_e": "ERROR",
    }


def test_parse_junit_xunit2_maps_expected_ids() -> None:
    xml = '<testsuite><testcase classname="pkg.test_y.TestK" name="test_q"/></testsuite>'
    assert parse_junit(xml, ["pkg/test_y.py::TestK::test_q"]) == {"pkg/test_y.py::TestK::test_q": "PASSED"}
