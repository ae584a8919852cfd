"""Grade one patch against one task in a fresh sandbox (docs/grading.md).

Fresh container -> apply the patch with git (patching.py: strict mode `git apply` only, harness mode also
`--3way` and GNU patch, never writing under `.git/`) -> set aside the test infrastructure among the paths git sees
changed (infra.py) -> restore the test files to base_commit and apply test_patch -> run test_cmd through the guard
(guard.py: the grader's wrapper and pytest plugin, a signed result) -> v5 verdicts. A run without a usable result,
or a grading step that fails after the patch applied, is the patch's fault (unresolved, reward 0, `reason`) when
the unpatched control run has a result (attribution.py), else an `error`. Infrastructure failures give status
"error" and reward None: never a silent 0.
"""

from __future__ import annotations

import contextlib
import shlex
import time
from dataclasses import replace
from typing import Any

from swerl_cli.core.errors import ConfigError, SandboxError
from swerl_cli.grading import guard, infra
from swerl_cli.grading.attribution import cached_control, control_key, control_problem, decide
from swerl_cli.grading.audit import Finding, as_record, audit_repo, enforce
from swerl_cli.grading.config import GradeConfig
from swerl_cli.grading.patching import RepoView, StepFailed
from swerl_cli.grading.verdict import SEMANTICS, verdict
from swerl_cli.sandbox import ExecResult, Sandbox, open_sandbox
from swerl_cli.sandbox.gitops import touched_files
from swerl_cli.streams.records import Task

JUNIT_PATH = "/tmp/swerl-junit.xml"
TEST_LOG_CAP = 2_000_000
# A sandbox failure only the engine can cause (not the code under test): an error, never the patch's fault.
_OUTSIDE = ("stopped from outside (killed", "container is gone", "sandbox start interrupted")


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


def users(cfg: GradeConfig) -> tuple[str | None, str | None]:
    """(the sandbox shell's user, the user the tests run as). A container's shell is root, the grader's side, and
    the tests run as `--sandbox-user` or else the repository's owner (nobody when root owns it): another uid
    (docs/grading.md, "Threat model"). An explicit root user, or a sandbox on the host, has no separation."""
    if not cfg.sandbox_backend.isolated:
        return cfg.sandbox_user, None
    if cfg.sandbox_user in ("root", "0"):
        return "0", None
    return "0", cfg.sandbox_user or "auto"


def _open(task: Task, cfg: GradeConfig, run_id: str) -> contextlib.AbstractContextManager[Sandbox]:
    return open_sandbox(
        task,
        cfg.sandbox_backend,
        limits=replace(cfg.limits(), user=users(cfg)[0]),
        run_id=run_id,
        hygiene=False,
        env={"CI": "1"},
    )


def grade_patch(task: Task, patch: str | None, cfg: GradeConfig, run_id: str) -> dict[str, Any]:
    """The `grade` object for `patch` applied to `task`; never raises for sandbox failures (status error). A
    configuration error of the sandbox (the local backend's --repo-dir has no clone of the task's repo) is this
    record's error too, named `ConfigError: ...`: a run whose first jobs all fail so stops (core/config_stop.py)."""
    t0 = time.monotonic()
    try:
        with _open(task, cfg, run_id) as sb:
            return enforce(_grade_in(sb, task, patch or "", cfg, t0, run_id), cfg.mode)
    except SandboxError as e:
        return _grade("error", t0, error=str(e))
    except ConfigError as e:
        return _grade("error", t0, error=f"ConfigError: {e}")


def _tail(text: str, n: int) -> str:
    return text if len(text) <= n else text[-n:]


def _apply(
    view: RepoView, patch: str, cfg: GradeConfig, t0: float
) -> tuple[str | None, list[str], dict[str, Any] | None]:
    """(apply method, audit notes, None), or (None, notes, the refusal's grade); an empty patch is not applied.

    A patch naming a path under `.git/` or a path through a symlink (as git reads it) is refused before any tool
    runs, in either mode."""
    if not patch.strip():
        return None, [], None
    path = view.write("model.patch", patch)
    named = view.numstat(path)
    notes = [] if named is not None else ["git cannot parse the patch"]
    git_paths = [p for p in named or [] if p == ".git" or p.startswith(".git/")]
    linked = view.through_symlink(named or [])
    log: list[str] = []
    method = None
    if git_paths:
        notes.append(f"names paths under .git/: {', '.join(git_paths[:5])}")
    if linked:
        notes.append(f"writes through a symlink: {', '.join(linked[:5])}")
    if not git_paths and not linked:
        method, log = view.apply(path, cfg.mode)
    if method is not None:
        return method, notes, None
    notes.append("refused by git apply" if cfg.mode == "strict" else "no tool applied it")
    audit = {"flagged": True, "touches_test_infra": False, "findings": [], "outside_writes": [], "patch": notes}
    audit["tampering"] = []
    tail = _tail("\n".join([*notes, *log]), cfg.log_tail_chars)
    if cfg.mode == "strict":
        return None, notes, _grade("unresolved", t0, reason="patch_failed", log_tail=tail, audit=audit)
    return None, notes, _grade("patch_failed", t0, log_tail=tail, audit=audit)


def _sh(sb: Sandbox, cmd: str, timeout_s: float = 300.0) -> ExecResult:
    res = sb.run(cmd, timeout_s)
    if res.timed_out:
        raise StepFailed(f"grading step timed out after {timeout_s}s: {cmd[:80]}")
    return res


def set_aside(view: RepoView, changed: list[str]) -> list[str]:
    """The test-infrastructure paths among those git sees changed (infra.py): by name, or pyproject/setup.cfg runner
    sections."""
    aside = [p for p in changed if infra.is_infra(p)]
    for p in infra.sectioned(changed):
        if p in aside:
            continue
        now = view.sh(f"cat -- {shlex.quote(p)} 2>/dev/null")
        toml = p.endswith("pyproject.toml")
        before = infra.runner_sections(view.show(p) or "", toml)
        if before != infra.runner_sections(now.output if now.exit_code == 0 else "", toml):
            aside.append(p)
    return sorted(aside)


def prepare_tests(view: RepoView, task: Task, aside: list[str]) -> str | None:
    """Restore the test files and the set-aside paths to base_commit, apply test_patch; an error message or None.
    The test files are the task's `test_files`, else what git reads in test_patch."""
    files: list[str] = []
    if task.test_patch.strip():
        files = view.numstat(view.write("test.patch", task.test_patch)) or []
    view.restore([*touched_files(task), *files, *aside])
    if task.test_patch.strip():
        err = view.apply_test_patch(task.test_patch)
        if err:
            return err
    view.sh(f"rm -f {JUNIT_PATH}")
    return None


def _tests(sb: Sandbox, task: Task, cfg: GradeConfig) -> guard.GuardRun:
    sweep = cfg.sandbox_backend.isolated  # a container holds nothing else; a host sandbox would reach the host's
    return guard.run(sb, task.test_cmd, cfg.timeout_s, cap=TEST_LOG_CAP, sweep=sweep, user=users(cfg)[1])


def control_run(task: Task, cfg: GradeConfig, run_id: str) -> tuple[guard.GuardRun, bool]:
    """The unpatched repository's guarded test run (cached per task and process): (run, was cached)."""

    def go() -> guard.GuardRun:
        with _open(task, cfg, run_id) as sb:
            _sh(sb, f"cd {shlex.quote(sb.workdir)}")
            err = prepare_tests(RepoView(sb, task.base_commit), task, [])
            if err:
                raise SandboxError(err)
            return _tests(sb, task, cfg)

    return cached_control(control_key(task, cfg.timeout_s, cfg.sandbox), go)


def _grade_in(sb: Sandbox, task: Task, patch: str, cfg: GradeConfig, t0: float, run_id: str) -> dict[str, Any]:
    n = cfg.log_tail_chars
    _sh(sb, f"cd {shlex.quote(sb.workdir)}")
    view = RepoView(sb, task.base_commit)
    method, notes, failed = _apply(view, patch, cfg, t0)
    if failed is not None:
        return failed
    common: dict[str, Any] = {"patch_applied": bool(method), "apply_method": method, "set_aside": []}
    found: list[Finding] = []
    try:
        changed = view.changed() if method else []
        found = audit_repo(view, changed)  # the static audit (audit.py): before the tests run
        common["set_aside"] = aside = set_aside(view, changed)
        err = prepare_tests(view, task, aside)
        if err and not method:
            return _grade("error", t0, error=err, **common)
        if err:
            raise StepFailed(err)
        run = _tests(sb, task, cfg)
    except SandboxError as e:
        if not method or any(m in str(e) for m in _OUTSIDE):
            raise
        return _step_failed(task, cfg, run_id, t0, str(e), notes, common, found)
    common.update(
        log_tail=_tail(run.output, n),
        test_duration_s=round(run.duration_s, 3),
        test_exit_code=run.exit_code,
        audit=_audit(aside, run, notes, found),
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


def _step_failed(
    task: Task,
    cfg: GradeConfig,
    run_id: str,
    t0: float,
    message: str,
    notes: list[str],
    common: dict[str, Any],
    found: list[Finding],
) -> dict[str, Any]:
    """A step after the patch applied failed (restore, test_patch, a timeout, the sandbox's shell killed by the
    out-of-memory killer): reward 0 with a reason when the unpatched control run gives a result, else an error."""
    reason = "out_of_memory" if "out of memory" in message else "grading_failed"
    ctl, cached = control_run(task, cfg, run_id)
    problem = control_problem(task, ctl)
    control = {"cached": cached, "duration_s": round(ctl.duration_s, 3), "problem": problem}
    aside = common.get("set_aside") or []
    audit = {
        "flagged": True,
        "touches_test_infra": bool(aside),
        "findings": [f"{reason}: {message[:300]}"],
        "outside_writes": [],
        "patch": notes,
        "tampering": as_record(found),
    }
    if problem is not None:
        return _grade("error", t0, error=f"{message} (the unpatched control run has no result either: {problem})",
                      control=control, audit=audit, **common)  # fmt: skip
    return _grade("unresolved", t0, reason=reason, error=message[:500], control=control, audit=audit, **common)


def _audit(aside: list[str], run: guard.GuardRun, notes: list[str], found: list[Finding]) -> dict[str, Any]:
    """What a person should look at: set-aside test infrastructure, guard findings, writes outside the repo, what
    applying the patch showed (`patch`) and the static audit's findings (`tampering`)."""
    return {
        "flagged": bool(aside or run.findings or run.outside_writes or notes or found),
        "touches_test_infra": bool(aside),
        "findings": run.findings[:50],
        "outside_writes": run.outside_writes,
        "patch": notes,
        "tampering": as_record(found),
    }
