"""Mining's run: each candidate's image built, its tests run before and after the fix, the task kept or dropped."""

from __future__ import annotations

import re
import secrets
import shlex
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from swerl_cli.core.errors import JobLostError, SandboxError
from swerl_cli.executor import LocalExecutor, stream_jobs
from swerl_cli.sandbox.gitops import git_argv, git_env
from swerl_cli.streams.records import Task
from swerl_cli.tasks.mining.commits import Candidate, MineConfig, inspect_commit, list_commits

if TYPE_CHECKING:
    from swerl_cli.grading.config import GradeConfig

_OK = frozenset({"PASSED", "XFAIL"})


@dataclass(slots=True)
class MineStats:
    """Counts for the summary line: commits seen, why some were not candidates, why candidates were dropped."""

    commits: int = 0
    candidates: int = 0
    tasks: int = 0
    resumed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """The closing line (after `swerl tasks mine: `)."""
        skipped = ", ".join(f"{k}: {v}" for k, v in sorted(self.skipped.items())) or "none"
        dropped = ", ".join(f"{k}: {v}" for k, v in sorted(self.dropped.items())) or "none"
        return (
            f"{self.commits} commits, {self.candidates} candidates ({self.resumed} already in the output), "
            f"{self.tasks} tasks; not candidates: {skipped}; dropped: {dropped}"
        )


def load_issues(path: str | None) -> dict[str, str]:
    """Problem statements by commit (full or abbreviated sha): JSONL rows {commit, problem_statement}."""
    if path is None:
        return {}
    from swerl_cli.streams.jsonl import read_records
    from swerl_cli.streams.records import require

    out: dict[str, str] = {}
    for loc in read_records(path):
        out[require(loc, "commit", str)] = require(loc, "problem_statement", str)
    return out


def issue_for(issues: dict[str, str], commit: str) -> str | None:
    """The issue text keyed by this commit's sha or a prefix of it (at least 7 characters)."""
    for key, text in issues.items():
        if len(key) >= 7 and commit.startswith(key):
            return text
    return None


def test_command(cfg: MineConfig, cand: Candidate, repo: str) -> str:
    """The test command over the Python test files that exist after the fix."""
    present = [f for f in cand.test_files if f.endswith(".py") and _exists_at(repo, cand.commit, f)]
    present = [f for f in present if PurePosixPath(f).name != "conftest.py"] or present
    return cfg.test_cmd.replace("{files}", " ".join(shlex.quote(f) for f in present))


def _exists_at(repo: str, commit: str, path: str) -> bool:
    res = subprocess.run(git_argv(repo, "cat-file", "-e", f"{commit}:{path}"), capture_output=True, env=git_env())
    return res.returncode == 0


def task_record(cand: Candidate, cfg: MineConfig, repo: str, image: str, issues: dict[str, str]) -> Task:
    """The task (FAIL_TO_PASS / PASS_TO_PASS still empty) for a candidate."""
    name = cfg.name or Path(repo).resolve().name
    statement = issue_for(issues, cand.commit) or cand.message
    return Task(
        instance_id=f"{name}-{cand.commit[:12]}",
        repo=cfg.repo_name or f"local/{name}",
        base_commit=cand.parent,
        problem_statement=statement,
        image=image,
        workdir="/testbed",
        test_cmd=test_command(cfg, cand, repo),
        test_patch=cand.test_patch,
        patch=cand.patch,
        setup=list(cfg.setup),
        extra={
            "repo_source": str(Path(repo).resolve()),
            "hints_text": "",
            "created_at": cand.date,
            "version": "0",
            "test_files": cand.test_files,
            "mined": {"commit": cand.commit, "repeats": cfg.repeats},
        },
    )


def outcome_lists(before: list[dict[str, str]], after: list[dict[str, str]]) -> tuple[list[str], list[str], list[str]]:
    """(FAIL_TO_PASS, PASS_TO_PASS, flaky) from the status maps of the repeated runs of each state.

    >>> outcome_lists([{"a": "FAILED", "b": "PASSED"}], [{"a": "PASSED", "b": "PASSED"}])
    (['a'], ['b'], [])
    """
    flaky = sorted(
        {t for runs in (before, after) for t in {k for m in runs for k in m} if len({m.get(t) for m in runs}) > 1}
    )
    b, a = before[0], after[0]
    f2p = sorted(t for t in a if a[t] in _OK and b.get(t) not in _OK)
    p2p = sorted(t for t in a if a[t] in _OK and b.get(t) in _OK)
    return f2p, p2p, flaky


def evaluate_candidate(task: Task, cfg: MineConfig, gcfg: GradeConfig) -> dict[str, Any] | str:
    """Run the tests before and after the fix `repeats` times each (graded as `gcfg` says); the finished task
    record, or a drop reason."""
    from swerl_cli.grading.grade import grade_patch

    run_id = str(gcfg.run_id)
    maps: dict[str, list[dict[str, str]]] = {"before": [], "after": []}
    for _ in range(cfg.repeats):
        for state, patch in (("before", ""), ("after", task.patch or "")):
            g = grade_patch(task, patch, gcfg, run_id)
            if g["status"] in ("error", "timeout", "patch_failed") or g.get("reason"):  # reason: a run with no result
                why = g.get("error") or g.get("reason") or g["status"]
                return f"{g.get('reason') or g['status']} {state} the fix: {why}"[:300]
            maps[state].append(dict((g.get("tests") or {}).get("status") or {}))
    f2p, p2p, flaky = outcome_lists(maps["before"], maps["after"])
    if flaky:
        return f"flaky: {', '.join(flaky[:3])}{' ...' if len(flaky) > 3 else ''}"
    if not f2p:
        return "no FAIL_TO_PASS"
    task.FAIL_TO_PASS, task.PASS_TO_PASS = f2p, p2p
    return task.to_json()


def image_slug(name: str) -> str:
    """A Docker repository name from any string: `image_slug("My Repo.git") == "my-repo-git"`."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "repo"


def reason_key(reason: str) -> str:
    """The counter a drop reason goes to: `flaky: a, b` -> `flaky`."""
    return re.split(r"[:(]", reason, maxsplit=1)[0].strip()


Event = Callable[[str, Any], None]


def mine_records(
    repo: str, cfg: MineConfig, *, done_ids: set[str] | None = None, on_event: Event | None = None
) -> Iterator[dict[str, Any]]:
    """Yield mined task records as they finish (`cfg.workers` candidates at a time); events report progress.

    Events: ("candidates", (n, stats)), ("image", (tag, "built"|"cached")), ("dropped", (instance_id, reason)),
    ("task", instance_id).
    """
    from swerl_cli.sandbox.build import build_image

    emit = on_event or (lambda kind, payload: None)
    stats = MineStats()
    issues = load_issues(cfg.issues)
    cands: list[Candidate] = []
    for commit, parents in list_commits(repo, cfg):
        stats.commits += 1
        found = inspect_commit(repo, commit, cfg, parents)
        if isinstance(found, str):
            stats.skipped[found] = stats.skipped.get(found, 0) + 1
        else:
            cands.append(found)
    stats.candidates = len(cands)
    name = cfg.name or Path(repo).resolve().name
    todo = [c for c in cands if f"{name}-{c.commit[:12]}" not in (done_ids or set())]
    stats.resumed = len(cands) - len(todo)
    emit("candidates", (len(todo), stats))
    if not todo:
        return
    from swerl_cli.grading.config import GradeConfig
    from swerl_cli.sandbox import run_cleanup

    run_id = f"mine-{time.strftime('%Y%m%d%H%M%S')}-{secrets.token_hex(3)}"
    gcfg = GradeConfig(timeout_s=cfg.timeout_s, run_id=run_id)  # its sandbox backend builds, runs and grades

    def one(cand: Candidate) -> tuple[str, dict[str, Any] | str]:
        task = task_record(cand, cfg, repo, f"swerl-mined-{image_slug(name)}:{cand.parent[:12]}", issues)
        try:
            # The whole history goes into the image (no hygiene at build): the episode's hygiene must remove it.
            built = build_image(
                task,
                gcfg.sandbox_backend,
                base_image=cfg.base_image,
                network=cfg.network,
                hygiene=False,
                allowed_sources=(repo,),
            )
        except SandboxError as e:
            return task.instance_id, f"error building the image: {e}"
        emit("image", (task.image, built))
        return task.instance_id, evaluate_candidate(task, cfg, gcfg)

    remove_sandboxes = run_cleanup(run_id, gcfg.sandbox_backend)  # after an interrupt or failure (live ones: swept)

    executor = LocalExecutor(cfg.workers, "swerl-mine")
    for _, outcome in stream_jobs(executor, ((c, one, (c,)) for c in todo), cleanup=remove_sandboxes):
        if isinstance(outcome, JobLostError):  # never for local jobs: their exceptions are raised here
            raise outcome
        iid, result = outcome.value
        if isinstance(result, str):
            key = reason_key(result)
            stats.dropped[key] = stats.dropped.get(key, 0) + 1
            emit("dropped", (iid, result))
        else:
            stats.tasks += 1
            emit("task", iid)
            yield result
