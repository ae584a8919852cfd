"""`swerl tasks synth`: SWE-smith-style tasks from any Python repository with tests (docs/tasks.md, synth).

Snapshot the repository (repo.py) -> build its image with `swerl tasks build`'s builder -> run the tests twice
(baseline) -> propose mutations (mutators.py) in a seeded order (plan.py) -> run each mutant's tests in a fresh
sandbox and keep it by the rule in probe.py (at most `per_function` tasks per function) -> optionally validate
each task as `swerl tasks validate` does (gold resolves, empty does not) -> split by function -> write.

Tasks take SWE-smith's form, which `swerl grade`, `collect` and `tasks build` read unchanged: `base_commit: "HEAD"`,
the bug as `bug_patch` (committed as a root commit at every sandbox start), the gold fix as `patch` (its
reverse), `patch_kind: "bug"`, no test_patch, and the repository as `repo_source` (the snapshot's bundle).
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from swerl_cli.core.errors import UsageError
from swerl_cli.grading.grade import GradeConfig
from swerl_cli.streams.records import Task
from swerl_cli.tasks.mining import image_slug
from swerl_cli.tasks.synth import plan, probe, repo
from swerl_cli.tasks.synth.mutators import MUTATORS, Mutation, mutations
from swerl_cli.tasks.synth.statement import problem_statement, shows_line

PYTEST = (
    "python3 -m pytest -rA --tb=short -p no:cacheprovider --color=no"
    " --junitxml=/tmp/swerl-junit.xml -o junit_family=xunit1"
)
Event = Callable[[str, Any], None]


@dataclass(frozen=True, slots=True)
class SynthConfig:
    """What `swerl tasks synth` mutates and how it runs the tests; flags are the kebab-case twins."""

    name: str | None = None
    mutators: tuple[str, ...] = MUTATORS
    files: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    test_cmd: str | None = None
    per_function: int = 1
    tries: int = 3
    max_tasks: int | None = None
    holdout: float = 0.25
    seed: int = 0
    workers: int = 1
    timeout_s: float | None = None  # None: 10x the slower baseline run, at least 30 s
    base_image: str = "swerl-base"
    setup: tuple[str, ...] = ()
    validate: int = 1
    located: bool = False  # keep only mutants whose statement's traceback shows the mutated line

    def __post_init__(self) -> None:
        bad = [m for m in self.mutators if m not in MUTATORS]
        if bad or not self.mutators:
            raise UsageError(
                f"--mutators: unknown {', '.join(bad) or '(none given)'}; choose from {', '.join(MUTATORS)}"
            )
        for key in ("per_function", "tries", "workers"):
            if getattr(self, key) < 1:
                raise UsageError(f"--{key.replace('_', '-')} must be >= 1; got {getattr(self, key)}")
        if self.max_tasks is not None and self.max_tasks < 1:
            raise UsageError(f"--max-tasks must be >= 1; got {self.max_tasks}")
        if not 0 <= self.holdout <= 1:
            raise UsageError(f"--holdout must be between 0 and 1; got {self.holdout}")
        if self.validate < 0 or (self.timeout_s is not None and not self.timeout_s > 0):
            raise UsageError("--validate must be >= 0 and --timeout-s > 0")

    def command(self) -> str:
        return self.test_cmd or " ".join([PYTEST, *self.tests])


@dataclass(slots=True)
class SynthStats:
    """Counts per mutator: candidates found, probed, kept, rejected by reason; run facts for the summary."""

    per_mutator: dict[str, dict[str, int]] = field(default_factory=dict)
    functions: int = 0
    baseline_tests: int = 0
    invalid: int = 0
    wall_s: float = 0.0
    grade_s: list[float] = field(default_factory=list)

    def bump(self, kind: str, key: str, n: int = 1) -> None:
        row = self.per_mutator.setdefault(kind, {"candidates": 0, "probed": 0, "kept": 0})
        row[key] = row.get(key, 0) + n

    def to_json(self) -> dict[str, Any]:
        g = sorted(self.grade_s)
        return {
            "per_mutator": self.per_mutator,
            "functions": self.functions,
            "baseline_tests": self.baseline_tests,
            "invalid": self.invalid,
            "wall_s": round(self.wall_s, 1),
            "grade_s_median": g[len(g) // 2] if g else None,
            "grade_s_max": g[-1] if g else None,
        }


def template(name: str, commit: str, bundle: Path, cfg: SynthConfig) -> Task:
    """The fields every task of this repository shares (its image is built from this record)."""
    return Task(
        instance_id=f"{name}.{commit[:8]}",
        repo=f"synth/{name}",
        base_commit="HEAD",
        problem_statement="",
        image=f"swerl-synth-{image_slug(name)}:{commit[:12]}",
        workdir="/testbed",
        test_cmd=cfg.command(),
        setup=list(cfg.setup),
        extra={"repo_source": str(bundle.resolve()), "log_parser": "parse_log_pytest", "test_files": []},
    )


def mutant_task(base: Task, m: Mutation, bug: str, gold: str, commit: str, cfg: SynthConfig) -> Task:
    """The task record of one mutant (FAIL_TO_PASS, PASS_TO_PASS and the statement come after its run)."""
    digest = hashlib.sha256(f"{m.path}\0{m.line}\0{m.kind}\0{bug}".encode()).hexdigest()[:8]
    fn = re.sub(r"[^A-Za-z0-9_.]+", "_", f"{m.path.removesuffix('.py').replace('/', '.')}.{m.function}")
    meta = {"function": plan.function_key(m), "file": m.path, "line": m.line, "mutator": m.kind}
    extra = {**base.extra, "bug_patch": bug, "patch_kind": "bug", "dataset": "swerl-synth", "version": "0"}
    extra["synth"] = {**meta, "upstream_commit": commit, "seed": cfg.seed}
    iid = f"{base.repo.split('/')[-1]}__{fn}.{m.kind}_{digest}"
    return replace(base, instance_id=iid, patch=gold, extra=extra)


def synthesize(src: str, out: Path, cfg: SynthConfig, on_event: Event | None = None) -> dict[str, list[dict[str, Any]]]:
    """Make, check and split the tasks of the repository at `src`; returns {"train": [...], "heldout": [...]}."""
    from swerl_cli.sandbox.build import build_image

    emit = on_event or (lambda kind, payload: None)
    t0 = time.monotonic()
    name = cfg.name or Path(src).resolve().name
    stats = SynthStats()
    with tempfile.TemporaryDirectory(prefix="swerl-synth-") as tmp:
        snap = Path(tmp) / "repo"
        commit = repo.snapshot(src, snap)
        bundle = out / f"{image_slug(name)}.bundle"
        repo.write_bundle(snap, bundle, commit)
        base = template(name, commit, bundle, cfg)
        run_id = f"synth-{time.strftime('%Y%m%d%H%M%S')}-{hashlib.sha256(str(time.time()).encode()).hexdigest()[:6]}"
        gcfg = GradeConfig(timeout_s=cfg.timeout_s or 600.0, run_id=run_id, log_tail_chars=1_000_000)
        built = build_image(base, gcfg.sandbox_backend, base_image=cfg.base_image, allowed_sources=(out,))
        emit("image", (base.image, built))
        passing, longest = probe.baseline(base, gcfg, run_id)
        if cfg.timeout_s is None:  # a mutant that loops forever costs this much, not the harness's default
            gcfg = replace(gcfg, timeout_s=max(30.0, round(10 * longest)))
            cfg = replace(cfg, timeout_s=gcfg.timeout_s)
        stats.baseline_tests = len(passing)
        emit("baseline", (len(passing), gcfg.timeout_s))
        found = [m for path in repo.source_files(snap, cfg.files) for m in _mutations(snap, path, cfg)]
        for m in found:
            stats.bump(m.kind, "candidates")
        stats.functions = len({plan.function_key(m) for m in found})
        order = plan.order_candidates(found, cfg.seed, cfg.tries)
        emit("candidates", (len(found), stats.functions, len(order)))
        kept = list(_kept(order, snap, base, commit, passing, cfg, gcfg, stats, emit))
    if cfg.validate:
        kept = _validate(kept, cfg, stats, emit)
    splits = plan.assign_splits([t.extra["synth"]["function"] for t in kept], cfg.holdout, cfg.seed)
    result: dict[str, list[dict[str, Any]]] = {"train": [], "heldout": []}
    for task in kept:
        split = splits[task.extra["synth"]["function"]]
        task.extra["synth"]["split"] = split
        result[split].append(task.to_json())
    stats.wall_s = time.monotonic() - t0
    emit("stats", stats)
    return result


def _mutations(snap: Path, path: str, cfg: SynthConfig) -> list[Mutation]:
    text = repo.read(snap, path)
    return [] if text is None else mutations(path, text, cfg.mutators)


def _kept(
    order: list[Mutation],
    snap: Path,
    base: Task,
    commit: str,
    passing: list[str],
    cfg: SynthConfig,
    gcfg: GradeConfig,
    stats: SynthStats,
    emit: Event,
) -> Iterator[Task]:
    """Probe the candidates `cfg.workers` at a time; decide in candidate order, so the result does not depend on
    which probe finishes first. A function stops after `per_function` tasks, the run after `max_tasks`."""
    from swerl_cli.executor import LocalExecutor, stream_jobs
    from swerl_cli.sandbox import run_cleanup

    per_fn: dict[str, int] = {}
    done = 0

    def wanted(m: Mutation) -> bool:
        full = cfg.max_tasks is not None and done >= cfg.max_tasks
        return not full and per_fn.get(plan.function_key(m), 0) < cfg.per_function

    def jobs() -> Iterator[tuple[int, Any, Any]]:
        for i, m in enumerate(order):
            if not wanted(m):  # an optimisation only: decisions below are made in order
                yield i, None, None
                continue
            bug, gold = repo.diff_pair(snap, m.path, m.source)
            task = mutant_task(base, m, bug, gold, commit, cfg)
            yield i, _probe_job, (task, passing, gcfg, run_id)

    run_id = str(gcfg.run_id)
    results: dict[int, Any] = {}
    nxt = 0
    for i, outcome in stream_jobs(
        LocalExecutor(cfg.workers, "swerl-synth"), jobs(), cleanup=run_cleanup(run_id, gcfg.sandbox_backend)
    ):
        results[i] = outcome.value if not isinstance(outcome, Exception) else (None, "error")
        while nxt in results:
            m, value = order[nxt], results.pop(nxt)
            nxt += 1
            if value is None or not wanted(m):
                continue
            task, verdict = value
            stats.bump(m.kind, "probed")
            if isinstance(verdict, str):
                stats.bump(m.kind, verdict)
                emit("rejected", (task.instance_id, verdict))
                continue
            task.FAIL_TO_PASS, task.PASS_TO_PASS, log, secs = verdict
            task.problem_statement = problem_statement(task.FAIL_TO_PASS, log)
            if cfg.located and not shows_line(task.problem_statement, m.path, m.line):
                stats.bump(m.kind, "unlocated")
                emit("rejected", (task.instance_id, "unlocated"))
                continue
            stats.grade_s.append(secs)
            stats.bump(m.kind, "kept")
            per_fn[plan.function_key(m)] = per_fn.get(plan.function_key(m), 0) + 1
            done += 1
            emit("kept", task.instance_id)
            yield task


def _probe_job(task: Task, passing: list[str], gcfg: GradeConfig, run_id: str) -> tuple[Task, Any]:
    t0 = time.monotonic()
    verdict = probe.probe(task, passing, gcfg, run_id)
    if isinstance(verdict, str):
        return task, verdict
    return task, (*verdict, round(time.monotonic() - t0, 2))


def _validate(tasks: list[Task], cfg: SynthConfig, stats: SynthStats, emit: Event) -> list[Task]:
    """Keep the tasks `swerl tasks validate` passes (gold resolves and the empty patch does not, every repeat)."""
    from swerl_cli.grading.validate import validate_tasks

    gcfg = GradeConfig(timeout_s=cfg.timeout_s or 600.0, workers=cfg.workers)
    kept = []
    by_id = {t.instance_id: t for t in tasks}
    for rec in validate_tasks(tasks, gcfg, cfg.validate):
        v = rec["validation"]
        emit("validated", (rec["instance_id"], v))
        if v["valid"]:
            task = by_id[rec["instance_id"]]
            task.extra["validation"] = v
            kept.append(task)
        else:
            stats.invalid += 1
            stats.bump(task_kind(by_id[rec["instance_id"]]), "invalid")
    return kept


def task_kind(task: Task) -> str:
    return str(task.extra["synth"]["mutator"])
