"""Grade one patch against one task in a fresh sandbox (docs/grading.md).

Fresh container -> apply the patch (git apply, git apply --3way, patch --fuzz=5; tree reset between tries) ->
set aside the patch's test infrastructure (infra.py) -> restore the test files to base_commit and apply
test_patch -> run test_cmd through the guard (guard.py: the grader's wrapper and pytest plugin, a signed result)
-> v5 verdicts. A run without a usable result is the patch's fault (unresolved, reward 0, `reason`) when the
unpatched control run has one (attribution.py), else an `error`. Infrastructure failures give status "error" and
reward None: never a silent 0.
"""

from __future__ import annotations

import contextlib
import shlex
import time
from typing import Any

from swerl_cli.core.errors import SandboxError
from swerl_cli.grading import guard, infra
from swerl_cli.grading.attribution import cached_control, control_key, decide
from swerl_cli.grading.config import GradeConfig
from swerl_cli.grading.verdict import SEMANTICS, verdict
from swerl_cli.sandbox import ExecResult, Sandbox, backend_class, open_sandbox
from swerl_cli.sandbox.gitops import patch_files, touched_files
from swerl_cli.streams.records import Task

JUNIT_PATH = "/tmp/swerl-junit.xml"
MODEL_PATCH = ".git/swerl-model.patch"
TEST_PATCH = ".git/swerl-test.patch"
APPLY = (
    ("git apply --verbose", f"git apply --verbose {MODEL_PATCH}"),
    ("git apply --verbose --3way", f"git apply --verbose --3way {MODEL_PATCH}"),
    ("patch --batch --fuzz=5 -p1", f"patch --batch --fuzz=5 -p1 -i {MODEL_PATCH}"),
)
RESET = "git checkout -q -- . && git clean -fdq"
TEST_LOG_CAP = 2_000_000


def _grade(status: str, t0: float, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "status": status,
        "resolved": status == "resolved",
        "reward": None if status == "error" else (1.0 if status == "resolved" else 0.0),
        "patch_applied": False,
        "apply_method": None,
        "tests": None,
        "test_exit_code": None,
        "log_parser": None,
        "log_tail": "",
        "duration_s": 0.0,
        "test_duration_s": None,
        "error": None,
        "reason": None,
        "set_aside": [],
        "audit": None,
        "control": None,
        "semantics": SEMANTICS,
    }
    out.update(fields)
    out["duration_s"] = round(time.monotonic() - t0, 3)
    return out


def episode_error_grade(error: object) -> dict[str, Any]:
    """The grade of a trajectory whose episode failed (exit_status error): an error, never a reward of 0."""
    return _grade("error", time.monotonic(), error=f"the episode failed, nothing to grade: {error}")


def error_grade(message: str) -> dict[str, Any]:
    """A `grade` object for a job that never produced one (its worker or node was lost): status error."""
    return _grade("error", time.monotonic(), error=message)


def _open(task: Task, cfg: GradeConfig, run_id: str) -> contextlib.AbstractContextManager[Sandbox]:
    return open_sandbox(
        task,
        backend=cfg.sandbox,
        limits=cfg.limits(),
        run_id=run_id,
        hygiene=False,
        env={"CI": "1"},
        repo_dir=cfg.repo_dir,
    )


def grade_patch(task: Task, patch: str | None, cfg: GradeConfig, run_id: str) -> dict[str, Any]:
    """The `grade` object for `patch` applied to `task`; never raises for sandbox failures (status error)."""
    t0 = time.monotonic()
    try:
        with _open(task, cfg, run_id) as sb:
            return _grade_in(sb, task, patch or "", cfg, t0, run_id)
    except SandboxError as e:
        return _grade("error", t0, error=str(e))


def _tail(text: str, n: int) -> str:
    return text if len(text) <= n else text[-n:]


def _apply(sb: Sandbox, patch: str, n: int, t0: float) -> tuple[str | None, dict[str, Any] | None]:
    """(apply method, None), or (None, the patch_failed grade); an empty patch is not applied."""
    if not patch.strip():
        return None, None
    sb.write_file(MODEL_PATCH, patch)
    tried = []
    for name, cmd in APPLY:
        res = _sh(sb, cmd)
        if res.exit_code == 0:
            return name, None
        tried.append(f"$ {cmd}\n{res.output}")
        _sh(sb, RESET)
    return None, _grade("patch_failed", t0, log_tail=_tail("\n".join(tried), n))


def _sh(sb: Sandbox, cmd: str, timeout_s: float = 300.0) -> ExecResult:
    res = sb.run(cmd, timeout_s)
    if res.timed_out:
        raise SandboxError(f"grading step timed out after {timeout_s}s: {cmd[:80]}")
    return res


def set_aside(sb: Sandbox, task: Task, patch: str) -> list[str]:
    """The patch's test-infrastructure paths (infra.py): by name, or pyproject/setup.cfg runner sections."""
    paths = infra.all_paths(patch)
    aside = [p for p in paths if infra.is_infra(p)]
    for p in infra.sectioned(paths):
        if p in aside:
            continue
        base = sb.run_uncapped(f"git show {shlex.quote(task.base_commit + ':' + p)} 2>/dev/null")
        now = sb.run_uncapped(f"cat -- {shlex.quote(p)} 2>/dev/null")
        before = infra.runner_sections(base.output if base.exit_code == 0 else "")
        if before != infra.runner_sections(now.output if now.exit_code == 0 else ""):
            aside.append(p)
    return sorted(aside)


def prepare_tests(sb: Sandbox, task: Task, aside: list[str]) -> str | None:
    """Restore the test files and the set-aside paths to base_commit, apply test_patch; an error message or None."""
    files, _ = patch_files(task.test_patch)
    restore = [
        f"if git cat-file -e {shlex.quote(task.base_commit + ':' + f)} 2>/dev/null; then "
        f"git checkout -q {shlex.quote(task.base_commit)} -- {shlex.quote(f)}; else rm -f -- {shlex.quote(f)}; fi"
        for f in dict.fromkeys([*touched_files(task), *files, *aside])
    ]
    if restore:
        res = _sh(sb, " && ".join(restore))
        if res.exit_code != 0:
            raise SandboxError(f"could not restore test files to base_commit: {res.output.strip()[-300:]}")
    if task.test_patch.strip():
        sb.write_file(TEST_PATCH, task.test_patch)
        res = _sh(sb, f"git apply --verbose {TEST_PATCH}")
        if res.exit_code != 0:
            return f"test_patch does not apply: {res.output.strip()[-300:]}"
    _sh(sb, f"rm -f {JUNIT_PATH}")
    return None


def _tests(sb: Sandbox, task: Task, cfg: GradeConfig) -> guard.GuardRun:
    sweep = backend_class(cfg.sandbox).isolated  # a container holds nothing else; a host sandbox would reach the host's
    return guard.run(sb, task.test_cmd, cfg.timeout_s, cap=TEST_LOG_CAP, sweep=sweep)


def control_run(task: Task, cfg: GradeConfig, run_id: str) -> tuple[guard.GuardRun, bool]:
    """The unpatched repository's guarded test run (cached per task and process): (run, was cached)."""

    def go() -> guard.GuardRun:
        with _open(task, cfg, run_id) as sb:
            _sh(sb, f"cd {shlex.quote(sb.workdir)}")
            err = prepare_tests(sb, task, [])
            if err:
                raise SandboxError(err)
            return _tests(sb, task, cfg)

    return cached_control(control_key(task, cfg.timeout_s, cfg.sandbox), go)


def _grade_in(sb: Sandbox, task: Task, patch: str, cfg: GradeConfig, t0: float, run_id: str) -> dict[str, Any]:
    n = cfg.log_tail_chars
    _sh(sb, f"cd {shlex.quote(sb.workdir)}")
    method, failed = _apply(sb, patch, n, t0)
    if failed is not None:
        return failed
    aside = set_aside(sb, task, patch) if method else []
    common: dict[str, Any] = {"patch_applied": bool(method), "apply_method": method, "set_aside": aside}
    err = prepare_tests(sb, task, aside)
    if err:
        return _grade("error", t0, error=err, **common)
    run = _tests(sb, task, cfg)
    common.update(
        log_tail=_tail(run.output, n),
        test_duration_s=round(run.duration_s, 3),
        test_exit_code=run.exit_code,
        audit=_audit(aside, run),
    )
    try:
        d = decide(task, run, lambda: control_run(task, cfg, run_id))
    except ValueError as e:  # an unknown log parser
        return _grade("error", t0, error=str(e), **common)
    common.update(control=d.control, log_parser=d.parser)
    if d.error:
        return _grade("error", t0, error=d.error, **common)
    if d.reason or d.statuses is None:
        why = f"{d.reason}: {', '.join(run.findings[:5])}" if run.findings else d.reason
        return _grade("unresolved", t0, reason=d.reason, error=why if run.findings else None, **common)
    resolved, tests = verdict(d.statuses, task.FAIL_TO_PASS, task.PASS_TO_PASS)
    return _grade("resolved" if resolved else "unresolved", t0, tests=tests, **common)


def _audit(aside: list[str], run: guard.GuardRun) -> dict[str, Any]:
    """What a person should look at: set-aside test infrastructure, guard findings, writes outside the repo."""
    return {
        "flagged": bool(aside or run.findings or run.outside_writes),
        "touches_test_infra": bool(aside),
        "findings": run.findings[:50],
        "outside_writes": run.outside_writes,
    }
