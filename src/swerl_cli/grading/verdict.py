"""From a {test_id: status} map to SWE-bench v5 FAIL_TO_PASS / PASS_TO_PASS verdicts.

v5 semantics: PASSED and XFAIL succeed everywhere; SKIPPED fails a FAIL_TO_PASS test but keeps a PASS_TO_PASS
test ("maintained"); FAILED, ERROR, XPASS and absent ids fail. An id with more '[' than ']' (datasets truncated
at a space, as the harness's parser cuts them) matches the ids whose text up to their first space is that id, when
every match agrees.
"""

from __future__ import annotations

from typing import Any

SEMANTICS = "swebench-v5"
# Why a patch that broke the test run scored 0 (`grade.reason`, docs/grading.md "Attribution")
# patch_failed: strict mode, git apply refused the patch; grading_failed: a grading step after the patch applied
# failed (restoring files, test_patch, a step timeout); out_of_memory: the sandbox's shell was killed for memory;
# tampering_suspected: strict mode, the static audit of the patch found a primitive that reaches the runner (audit.py).
REASONS = (
    "timeout",
    "no_results",
    "tests_crashed",
    "results_untrusted",
    "patch_failed",
    "grading_failed",
    "out_of_memory",
    "tampering_suspected",
)
_F2P_OK = frozenset({"PASSED", "XFAIL"})
_P2P_OK = frozenset({"PASSED", "XFAIL", "SKIPPED"})


def expand_file_errors(status: dict[str, str], expected: list[str]) -> dict[str, str]:
    """A collection error reported for a whole file (`ERROR path`) errors every expected test under it."""
    files = [k for k, v in status.items() if v == "ERROR" and "::" not in k]
    if not files:
        return status
    out = dict(status)
    for tid in expected:
        if tid not in out:
            for f in files:
                if tid.startswith(f + "::"):
                    out[tid] = "ERROR"
    return out


def lookup(status: dict[str, str], tid: str, ok: frozenset[str]) -> bool:
    """Whether `tid` counts as a success under the `ok` statuses (with v5's truncated-id prefix rule)."""
    if tid in status:
        return status[tid] in ok
    escaped = tid.encode("unicode_escape").decode("ascii")  # pytest writes non-ASCII parameters escaped
    if escaped in status:
        return status[escaped] in ok
    if tid.count("[") > tid.count("]"):
        # the harness keys a test by its id up to the first space: the ids that share that key
        verdicts = {status[k] in ok for k in status if k.split(" ", 1)[0] == tid}
        return verdicts == {True}
    return False


def verdict(status: dict[str, str], f2p: list[str], p2p: list[str]) -> tuple[bool, dict[str, Any]]:
    """(resolved, tests) where tests = {FAIL_TO_PASS: {success, failure}, PASS_TO_PASS: {...}, status: map}."""
    status = expand_file_errors(status, [*f2p, *p2p])
    tests: dict[str, Any] = {}
    for key, ids, ok in (("FAIL_TO_PASS", f2p, _F2P_OK), ("PASS_TO_PASS", p2p, _P2P_OK)):
        res: dict[str, list[str]] = {"success": [], "failure": []}
        for tid in ids:
            res["success" if lookup(status, tid, ok) else "failure"].append(tid)
        tests[key] = res
    tests["status"] = dict(sorted(status.items()))
    resolved = not tests["FAIL_TO_PASS"]["failure"] and not tests["PASS_TO_PASS"]["failure"]
    return resolved, tests


def suspicious(status: dict[str, str], exit_code: int | None) -> str | None:
    """Why a parsed map cannot be trusted (v5 checks), or None: empty map, or nonzero exit with no failure."""
    if not status:
        return f"no test results in the log (test exit code {exit_code}); the suite did not run"
    if exit_code not in (0, None) and not any(v in ("FAILED", "ERROR") for v in status.values()):
        return f"tests exited with code {exit_code} but no test failed; the log cannot be trusted"
    return None
