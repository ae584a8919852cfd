"""Log parsers and v5 verdicts on crafted logs (no engine)."""

from __future__ import annotations

import pytest

from swerl_cli.grading.logs import (
    log_family,
    node_id,
    parse_django_log,
    parse_junit,
    parse_pytest_log,
    parse_sympy_log,
    parse_text_log,
)
from swerl_cli.grading.verdict import suspicious, verdict

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
    resolved, tests = verdict(status, f2p, p2p)
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
    assert verdict(status, ["t/test_a.py::test_ok"], [])[0] is True


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


DJANGO_LOG = """\
Testing against Django installed in '/testbed/django'
Importing application template_tests
Skipping setup of unused database(s): other.
Operations to perform:
  Apply all migrations: (none)
System check identified no issues (0 silenced).
test_inputs (template_tests.filter_tests.test_floatformat.FunctionTests) ... ok
test_low_decimal_precision (template_tests.filter_tests.test_floatformat.FunctionTests)
#15789 ... ok
test_negative_zero_values (template_tests.filter_tests.test_floatformat.FunctionTests) ... FAIL
test_chatty (m.T) ... some output the test printed
ok
test_broken (m.T) ... ERROR
test_needs_db (m.T) ... skipped 'no database'
test_known (m.T) ... expected failure
test_lucky (m.T) ... unexpected success
test_zero_values (template_tests.filter_tests.test_floatformat.FunctionTests.test_zero_values) ... ok

======================================================================
FAIL: test_negative_zero_values (template_tests.filter_tests.test_floatformat.FunctionTests)
----------------------------------------------------------------------
Traceback (most recent call last):
AssertionError: '-0' != '0'

======================================================================
ERROR: test_late (m.T)
Checks the teardown of a test whose progress line said ok
----------------------------------------------------------------------
Traceback (most recent call last):
RuntimeError: boom

----------------------------------------------------------------------
Ran 10 tests in 0.010s

FAILED (failures=1, errors=1, skipped=1, expected failures=1, unexpected successes=1)
"""


def test_django_parser_reads_progress_lines_docstrings_late_outcomes_and_reports() -> None:
    got = parse_django_log(DJANGO_LOG)
    assert got == {
        "test_inputs (template_tests.filter_tests.test_floatformat.FunctionTests)": "PASSED",
        "#15789": "PASSED",  # a docstring's first line is the test's id
        "test_negative_zero_values (template_tests.filter_tests.test_floatformat.FunctionTests)": "FAILED",
        "test_chatty (m.T)": "PASSED",  # the outcome came on a later line
        "test_broken (m.T)": "ERROR",
        "test_needs_db (m.T)": "SKIPPED",
        "test_known (m.T)": "XFAIL",
        "test_lucky (m.T)": "FAILED",
        "test_zero_values (template_tests.filter_tests.test_floatformat.FunctionTests.test_zero_values)": "PASSED",
        "Checks the teardown of a test whose progress line said ok": "ERROR",  # from the report section only
    }
    f2p = ["test_negative_zero_values (template_tests.filter_tests.test_floatformat.FunctionTests)"]
    resolved, _ = verdict(got, f2p, ["#15789"])
    assert not resolved
    assert suspicious(got, 1) is None


SYMPY_LOG = """\
============================= test process starts ==============================
executable:         /opt/miniconda3/envs/testbed/bin/python  (3.9.19-final-0) [CPython]
architecture:       64-bit
random seed:        4521307
hash randomization: on (PYTHONHASHSEED=1234)

sympy/core/tests/test_basic.py[3]
test__aresame ok
test_structure F
test_immutable E

sympy/core/tests/test_numbers.py[4]
test_mod_inverse ok
test_known_bug f
test_slow_thing w
test_pow_timeout T

________________________________________________________________________________
_____________ sympy/core/tests/test_basic.py:test_structure ______________
Traceback (most recent call last):
AssertionError

________________________________ slowest tests _________________________________
====== tests finished: 2 passed, 1 failed, 1 skipped, 1 expected to fail, 1 exceptions, in 0.51 seconds =======
DO *NOT* COMMIT!
"""


def test_sympy_parser_reads_verbose_lines_and_failure_headers() -> None:
    got = parse_sympy_log(SYMPY_LOG)
    assert got == {
        "test__aresame": "PASSED",
        "test_structure": "FAILED",
        "test_immutable": "ERROR",
        "test_mod_inverse": "PASSED",
        "test_known_bug": "XFAIL",
        "test_slow_thing": "SKIPPED",
        "test_pow_timeout": "FAILED",
    }
    # A failure header alone (no verbose line, e.g. output interleaved) still marks the test failed.
    assert parse_sympy_log("___ sympy/a/tests/test_b.py:test_c ___\n") == {"test_c": "FAILED"}


def test_log_family_maps_swerl_and_swebench_parser_names() -> None:
    assert log_family("django") == log_family("parse_log_django") == "django"
    assert log_family("parse_log_sympy") == "sympy"
    assert {log_family(n) for n in ("pytest_rA", "junit", "parse_log_pytest_v2", "parse_log_matplotlib", None)} == {
        "pytest"
    }
    assert log_family("parse_log_jest") == "unknown"


def _smith_log(n_pass: int, failed: list[str]) -> str:
    """A `pytest --verbose --tb=no` log without -rA, as SWE-smith's validation writes it (long, trimmed FAILED)."""
    ids = [f"tests/test_big.py::test_ok_{i}" for i in range(n_pass)] + failed
    lines = ["============================= test session starts ==============================", "collected ..."]
    lines += [
        f"{t} {'FAILED' if t in failed else 'PASSED'}{' ' * 8}[{100 * (k + 1) // len(ids):3d}%]"
        for k, t in enumerate(ids)
    ]
    lines += [
        "=================================== FAILURES ===================================",
        "____ test_bad_0 ____",
        "captured: tests/test_big.py::test_fake PASSED",
        "PASSED tests/x.py::spoof",
        "=========================== short test summary info ============================",
    ]
    lines += [f"FAILED {t} - AssertionError: assert {'x' * 40}..." for t in failed]
    lines += [f"======================= {len(failed)} failed, {n_pass} passed in 3.21s ======================="]
    return "\n".join(lines) + "\n"


def test_verbose_log_without_rA_keeps_passing_tests() -> None:
    failed = [f"tests/test_big.py::test_bad_{i}[a - b {i}]" for i in range(9)]
    got = parse_pytest_log(_smith_log(422, failed))
    assert len(got) == 431
    assert sum(v == "PASSED" for v in got.values()) == 422
    assert all(got[t] == "FAILED" for t in failed)
    assert "tests/test_big.py::test_fake" not in got
    assert "tests/x.py::spoof" not in got
    resolved, _ = verdict(got, [f"tests/test_big.py::test_ok_{i}" for i in range(5)], [])
    assert resolved


def test_progress_and_summary_merge_worse_outcome_and_xdist() -> None:
    log = (
        "=== test session starts ===\n"
        "[gw0] [ 50%] PASSED a.py::t1\n"
        "[gw1] [100%] FAILED a.py::t2[x y]\n"
        "a.py::t3 PASSED [ 10%]\n"
        "a.py::t4 SKIPPED (no network) [ 20%]\n"
        "=== short test summary info ===\n"
        "ERROR a.py::t3 - teardown broke\n"
        "=== 1 failed, 2 passed, 1 error in 0.1s ===\n"
    )
    assert parse_pytest_log(log) == {
        "a.py::t1": "PASSED",
        "a.py::t2[x y]": "FAILED",
        "a.py::t3": "ERROR",
        "a.py::t4": "SKIPPED",
    }


def test_path_parametrised_ids_are_shortened_for_their_repos() -> None:
    log = (
        "=== short test summary info ===\n"
        "PASSED tests/test_fs.py::test_read[/n/fs/p-swe-bench/temp/pydicom/data/CT_small.dcm]\n"
        "PASSED tests/test_fs.py::test_glob[/data/*.dcm]\nPASSED tests/test_fs.py::test_url[//host/x]\n"
    )
    got, parser = parse_text_log("parse_log_pydicom", log)
    assert parser == "pytest-short-paths"
    assert set(got) == {
        "tests/test_fs.py::test_read[/CT_small.dcm]",
        "tests/test_fs.py::test_glob[/data/*.dcm]",
        "tests/test_fs.py::test_url[//host/x]",
    }
    assert (
        "tests/test_fs.py::test_read[/n/fs/p-swe-bench/temp/pydicom/data/CT_small.dcm]"
        in parse_text_log("parse_log_pytest", log)[0]
    )
    mpl = parse_text_log("parse_log_matplotlib", "=== short test summary info ===\nPASSED t.py::f[MouseButton.LEFT]\n")
    assert mpl[0] == {"t.py::f[1]": "PASSED"}


def test_parser_names_dispatch_and_unknown_name_is_refused() -> None:
    assert parse_text_log("parse_log_sympy", "test_a ok\n") == ({"test_a": "PASSED"}, "sympy")
    assert parse_text_log("parse_log_django", "test_a (m.T) ... ok\n")[1] == "django"
    assert parse_text_log("parse_log_pytest_v2", "a.py::t \x1b[32mPASSED\x1b[0m\x07\n")[0] == {"a.py::t": "PASSED"}
    with pytest.raises(ValueError, match="no log parser named 'parse_log_jest'"):
        parse_text_log("parse_log_jest", "")
    assert parse_text_log(None, "nothing here\n")[0] == {}  # no result: the grader turns this into an error
    assert "did not run" in suspicious({}, 0)
