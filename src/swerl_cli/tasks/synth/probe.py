"""Running a repository's tests for synth through swerl's grader: the baseline, each mutant, the keep rule.

Every run is `grade_patch` with the empty patch on a task whose `bug_patch` (none for the baseline) the sandbox
commits at start, exactly as episodes and grading see the task later; statuses come from the grader's parsers
(JUnit XML first). A mutant is kept when at least one test that passed in every baseline run now fails or errors,
and every such test was still collected (a test gone from the results, or a file-level collection error, means
the mutant broke an import: rejected as `import`, as is a run that reported no test). Other rejections:
`survived` (no test fails), `timeout`, `error` (the sandbox failed, or the grader did not trust the run).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from swerl_cli.core.errors import InputError
from swerl_cli.grading.grade import GradeConfig, grade_patch
from swerl_cli.streams.records import Task

OK = frozenset({"PASSED", "XFAIL"})
REASONS = ("survived", "import", "timeout", "error")


def status_map(grade: dict[str, Any]) -> dict[str, str]:
    return dict((grade.get("tests") or {}).get("status") or {})


def baseline(task: Task, cfg: GradeConfig, run_id: str, repeats: int = 2) -> tuple[list[str], float]:
    """Tests that pass in every one of `repeats` runs of the unmutated repository (sorted), and the longest run's
    test time in seconds."""
    clean = replace(task, extra={k: v for k, v in task.extra.items() if k != "bug_patch"})
    passing: set[str] | None = None
    longest = 0.0
    for _ in range(repeats):
        g = grade_patch(clean, "", cfg, run_id)
        longest = max(longest, float(g.get("test_duration_s") or 0.0))
        found = status_map(g)
        if g["status"] in ("error", "timeout") and not found:
            why = g.get("error") or g["status"]
            raise InputError(task.extra.get("repo_source", task.repo), None, None, f"the tests did not run: {why}")
        ok = {t for t, s in found.items() if s in OK}
        passing = ok if passing is None else passing & ok
    if not passing:
        raise InputError(str(task.extra.get("repo_source", task.repo)), None, None, "no test passes before mutation")
    return sorted(passing), longest


def judge(grade: dict[str, Any], passing: list[str]) -> tuple[list[str], list[str]] | str:
    """(FAIL_TO_PASS, PASS_TO_PASS) of a mutant's run, or the reason it is rejected (one of REASONS)."""
    found = status_map(grade)
    if grade["status"] == "timeout":
        return "timeout"
    if grade["status"] == "error" or (not found and grade.get("test_exit_code") is None):
        return "error"  # the sandbox failed, or the grader could not trust the run
    if not found:
        return "import"
    if any("::" not in t and s == "ERROR" for t, s in found.items()) or any(t not in found for t in passing):
        return "import"
    f2p = [t for t in passing if found[t] not in OK]
    if not f2p:
        return "survived"
    return f2p, [t for t in passing if found[t] in OK]


def probe(task: Task, passing: list[str], cfg: GradeConfig, run_id: str) -> tuple[list[str], list[str], str] | str:
    """Run a mutant's tests: (FAIL_TO_PASS, PASS_TO_PASS, test log) or a rejection reason."""
    g = grade_patch(task, "", cfg, run_id)
    verdict = judge(g, passing)
    if isinstance(verdict, str):
        return verdict
    return verdict[0], verdict[1], str(g.get("log_tail") or "")
