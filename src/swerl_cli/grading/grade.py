"""Grade one patch against one task in a fresh sandbox (docs/grading.md).

Fresh container -> apply the patch (git apply, git apply --3way, patch --fuzz=5; tree reset between tries) ->
restore the test_patch's files to base_commit (new ones removed) and apply test_patch -> run test_cmd with a
timeout -> parse JUnit XML if the run wrote /tmp/swerl-junit.xml, else pytest's -rA summary -> v5 verdicts.
Infrastructure failures give status "error" and reward None: never a silent 0.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from typing import Any

from swerl_cli.config import check_positive
from swerl_cli.errors import ConfigError, SandboxError
from swerl_cli.executor import JobSettings
from swerl_cli.grading.logs import log_family, parse_junit, parse_text_log
from swerl_cli.grading.verdict import SEMANTICS, suspicious, verdict
from swerl_cli.records import Task
from swerl_cli.sandbox import BACKENDS, ExecResult, Sandbox, SandboxLimits, open_sandbox
from swerl_cli.sandbox.gitops import patch_files, touched_files

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


@dataclass(frozen=True, slots=True)
class GradeConfig(JobSettings):
    """How `swerl grade` runs tests: sandbox backend, limits, timeout, parallelism (fields = flags)."""

    sandbox: str = "docker"
    timeout_s: float = 1800.0
    workers: int = 1
    memory_mb: int = 4096
    cpus: float = 1.0
    pids: int = 1024
    network: bool = False
    run_id: str | None = None
    repo_dir: str | None = None
    sandbox_user: str | None = None  # None: the image's USER (swerl-built images: unprivileged `swerl`)
    log_tail_chars: int = 4000
    # registry, pull, image_budget_gb, ray, episode_* and max_episode_retries: JobSettings

    def __post_init__(self) -> None:
        self.check_job_settings()
        if self.sandbox not in BACKENDS:
            raise ConfigError(f"field 'sandbox': {self.sandbox!r} is not one of {', '.join(BACKENDS)}")
        check_positive("timeout_s", self.timeout_s)
        check_positive("cpus", self.cpus)
        if not 1 <= self.workers <= 256:
            raise ConfigError(f"field 'workers': must be between 1 and 256; got {self.workers}")
        if self.memory_mb < 64 or self.cpus <= 0 or self.pids < 16:
            raise ConfigError("limits: memory_mb >= 64, cpus > 0 and pids >= 16 are required")

    def limits(self) -> SandboxLimits:
        """The sandbox limits this config implies."""
        return SandboxLimits(
            memory_mb=self.memory_mb, cpus=self.cpus, pids=self.pids, network=self.network, user=self.sandbox_user
        )


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


def grade_patch(task: Task, patch: str | None, cfg: GradeConfig, run_id: str) -> dict[str, Any]:
    """The `grade` object for `patch` applied to `task`; never raises for sandbox failures (status error)."""
    t0 = time.monotonic()
    try:
        with open_sandbox(
            task,
            backend=cfg.sandbox,
            limits=cfg.limits(),
            run_id=run_id,
            hygiene=False,
            env={"CI": "1"},
            repo_dir=cfg.repo_dir,
        ) as sb:
            return _grade_in(sb, task, patch or "", cfg, t0)
    except SandboxError as e:
        return _grade("error", t0, error=str(e))


def _results(sb: Sandbox, log: str, task: Task) -> tuple[dict[str, str], str]:
    """The JUnit XML the test command wrote (pytest tasks), else the log through the task's parser."""
    name = task.extra.get("log_parser")
    if log_family(name) == "pytest":
        xml = sb.run_uncapped(f"cat {JUNIT_PATH} 2>/dev/null", 60)
        if xml.exit_code == 0 and xml.output.strip():
            try:
                status_map = parse_junit(xml.output, [*task.FAIL_TO_PASS, *task.PASS_TO_PASS])
            except Exception:  # a malformed XML falls back to the text log
                status_map = {}
            if status_map:
                return status_map, "junit"
    return parse_text_log(name, log)


def _tail(text: str, n: int) -> str:
    return text if len(text) <= n else text[-n:]


def _grade_in(sb: Sandbox, task: Task, patch: str, cfg: GradeConfig, t0: float) -> dict[str, Any]:
    def sh(cmd: str, timeout_s: float = 300.0) -> ExecResult:
        res = sb.run(cmd, timeout_s)
        if res.timed_out:
            raise SandboxError(f"grading step timed out after {timeout_s}s: {cmd[:80]}")
        return res

    n = cfg.log_tail_chars
    sh(f"cd {shlex.quote(sb.workdir)}")
    method = None
    if patch.strip():
        sb.write_file(MODEL_PATCH, patch)
        tried = []
        for name, cmd in APPLY:
            res = sh(cmd)
            if res.exit_code == 0:
                method = name
                break
            tried.append(f"$ {cmd}\n{res.output}")
            sh(RESET)
        if method is None:
            return _grade("patch_failed", t0, log_tail=_tail("\n".join(tried), n))
    files, _ = patch_files(task.test_patch)
    restore = [
        f"if git cat-file -e {shlex.quote(task.base_commit + ':' + f)} 2>/dev/null; then "
        f"git checkout -q {shlex.quote(task.base_commit)} -- {shlex.quote(f)}; else rm -f -- {shlex.quote(f)}; fi"
        for f in dict.fromkeys([*touched_files(task), *files])
    ]
    if restore:
        res = sh(" && ".join(restore))
        if res.exit_code != 0:
            raise SandboxError(f"could not restore test files to base_commit: {res.output.strip()[-300:]}")
    if task.test_patch.strip():
        sb.write_file(TEST_PATCH, task.test_patch)
        res = sh(f"git apply --verbose {TEST_PATCH}")
        if res.exit_code != 0:
            return _grade(
                "error",
                t0,
                patch_applied=bool(method),
                apply_method=method,
                error=f"test_patch does not apply: {res.output.strip()[-300:]}",
            )
    sh(f"rm -f {JUNIT_PATH}")
    run = sb.run(task.test_cmd, cfg.timeout_s, cap=TEST_LOG_CAP)
    common: dict[str, Any] = {
        "patch_applied": bool(method),
        "apply_method": method,
        "log_tail": _tail(run.output, n),
        "test_duration_s": round(run.duration_s, 3),
    }
    if run.timed_out:
        return _grade("timeout", t0, error=f"test_cmd timed out after {cfg.timeout_s}s", **common)
    try:
        status_map, parser = _results(sb, run.output, task)
    except ValueError as e:
        return _grade("error", t0, error=str(e), **common)
    resolved, tests = verdict(status_map, task.FAIL_TO_PASS, task.PASS_TO_PASS)
    why = suspicious(status_map, run.exit_code)
    common.update(tests=tests, test_exit_code=run.exit_code, log_parser=parser)
    if why:
        return _grade("error", t0, error=why, **common)
    return _grade("resolved" if resolved else "unresolved", t0, **common)
