"""Whose fault is a test run without a usable result: the patch's (unresolved, reward 0, a reason) or not (error).

A patched run that timed out, produced no result, crashed, or produced one the guard cannot trust is compared
with a control run: the same task without the model patch, in a fresh sandbox, run once per task and process and
cached. When the control run gives a usable result, the patch broke the run: `unresolved`, reward 0, with
`grade.reason`. When it does not, the task cannot be graded here: `error`. Findings the control run has too (the
task's own tests do the same thing) are not held against the patch (docs/grading.md, "Attribution").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from swerl_cli.grading.guard import GuardRun
from swerl_cli.grading.logs import SHORT_PATH_PARSERS, log_family, parse_text_log, short_param_path
from swerl_cli.grading.verdict import REASONS, suspicious
from swerl_cli.streams.records import Task

__all__ = ["REASONS", "Decision", "cached_control", "control_key", "control_problem", "decide"]
_cache: dict[tuple[Any, ...], GuardRun] = {}
_locks: dict[tuple[Any, ...], threading.Lock] = {}
_guard = threading.Lock()


@dataclass(slots=True)
class Decision:
    """Statuses to give a verdict on (`reason` None), or the reason the patch gets 0, or an infra `error`."""

    statuses: dict[str, str] | None = None
    parser: str | None = None
    reason: str | None = None
    error: str | None = None
    control: dict[str, Any] | None = None


def control_key(task: Task, timeout_s: float, backend: str) -> tuple[Any, ...]:
    """What a control run depends on: the task's image, commit, tests and command, the timeout and backend."""
    return (task.instance_id, task.image, task.base_commit, task.test_patch, task.test_cmd, timeout_s, backend)


def cached_control(key: tuple[Any, ...], run: Callable[[], GuardRun]) -> tuple[GuardRun, bool]:
    """The control run for `key` (run once per process; concurrent callers wait): (run, was cached)."""
    with _guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        if key in _cache:
            return _cache[key], True
        res = run()
        _cache[key] = res
        return res, False


def normalize_ids(name: str | None, status: dict[str, str]) -> tuple[dict[str, str], str]:
    """The guard plugin's {node id: status} with the id normalisation of the task's parser (as its text logs
    get): (map, parser label) where the label is `guard`, `guard-short-paths` or `guard-matplotlib`."""
    key = (name or "pytest").removeprefix("parse_log_")
    if key in SHORT_PATH_PARSERS:
        return {short_param_path(k): v for k, v in status.items()}, "guard-short-paths"
    if key == "matplotlib":
        fix = {"MouseButton.LEFT": "1", "MouseButton.RIGHT": "3"}
        out = {}
        for k, v in status.items():
            for a, b in fix.items():
                k = k.replace(a, b)
            out[k] = v
        return out, "guard-matplotlib"
    return dict(status), "guard"


def _log_statuses(task: Task, run: GuardRun) -> tuple[dict[str, str], str, str | None]:
    """Text-log mode (Django, sympy, or a pytest run the plugin cannot reach): map, parser, problem."""
    status, parser = parse_text_log(task.extra.get("log_parser"), run.output)
    if run.timed_out:
        return status, parser, "timeout"
    why = suspicious(status, run.exit_code)
    if why and run.oom_kills:
        return status, parser, "out_of_memory"
    if why:
        return status, parser, "no_results" if not status else "results_untrusted"
    return status, parser, None


def control_problem(task: Task, ctl: GuardRun) -> str | None:
    """Why the unpatched control run gives no usable result, or None (the plugin's view; the log's when the plugin
    never loads for this task or the task is read from its log)."""
    if log_family(task.extra.get("log_parser")) == "pytest" and ctl.hellos > 0:
        return ctl.problem()
    return _log_statuses(task, ctl)[2]


def decide(task: Task, run: GuardRun, control: Callable[[], tuple[GuardRun, bool]]) -> Decision:
    """The verdict's input for a patched run, consulting the control run only when the run has a problem."""
    name = task.extra.get("log_parser")
    plugin = log_family(name) == "pytest"
    if plugin:
        problem = run.problem()
        if problem is None:
            status, parser = normalize_ids(name, run.statuses)
            return Decision(status, parser)
    else:
        status, parser, problem = _log_statuses(task, run)
        if problem is None:
            return Decision(status, parser)
    ctl, cached = control()
    info: dict[str, Any] = {"cached": cached, "duration_s": round(ctl.duration_s, 3)}
    if plugin and ctl.verified and not ctl.timed_out and ctl.hellos == 0 and run.hellos == 0:
        # The plugin cannot load for this task (its command does not run pytest where PYTHONPATH reaches):
        # the text log is all there is, as for Django and sympy.
        status, parser, problem = _log_statuses(task, run)
        _, _, ctl_problem = _log_statuses(task, ctl)
        info["mode"] = "log"
        if problem is None:
            return Decision(status, parser, control=info)
    else:
        ctl_problem = ctl.problem() if plugin else _log_statuses(task, ctl)[2]
    info["problem"] = ctl_problem
    if ctl_problem is not None:
        return Decision(
            error=f"no test results the grader can use ({problem}), and none from the unpatched repository's "
            f"control run either ({ctl_problem}): the task cannot be graded here",
            control=info,
        )
    if plugin and info.get("mode") != "log":
        problem = run.problem(frozenset(ctl.findings))
        if problem is None:  # every finding is the task's own (the control run has it too)
            status, parser = normalize_ids(name, run.statuses)
            return Decision(status, parser, control=info)
    return Decision(reason=problem, control=info)
