"""Inputs of `swerl report` -> ReportData: iterations found on disk, streamed once into statistics and viewer bodies.

An RL run directory (the layout of `make rl`) holds iter-k/ per checkpoint k: graded.jsonl (rollouts of checkpoint
k), eval-graded.jsonl (held-out eval of checkpoint k), dapo.json and metrics.jsonl (the update k -> k+1), and
probe.json (the forward-only probe of checkpoint k; curve.py draws the learning curve per run directory). Plain
graded files are one iteration each, in the order given. Records are read one at a time: only the statistics and
the compact viewer bodies stay in memory.
"""

from __future__ import annotations

import json
import re
import stat
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swerl_cli.core.errors import InputError
from swerl_cli.report.aggregate import (
    audit_codes,
    check_dapo_summary,
    dapo_stats,
    heat_map,
    penalty_settings,
    split_stats,
)
from swerl_cli.report.curve import RunCurve, Tally, run_curve
from swerl_cli.report.viewer import body_of, tamper_flag
from swerl_cli.streams.graded import read_graded
from swerl_cli.streams.jsonl import read_records

_ITER = re.compile(r"^iter-(\d+)$")


@dataclass(slots=True)
class Source:
    """One iteration's files (any may be absent)."""

    label: str
    graded: str | None = None
    eval: str | None = None
    dapo: str | None = None
    metrics: str | None = None
    run: str | None = None  # the run directory as given (None for a graded file)
    run_name: str = ""  # its name on the page: the directory's name, or the path as given when two share one
    k: int = 0


@dataclass
class ReportData:
    """Everything the HTML page shows."""

    title: str
    iterations: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    heat: dict[str, dict[str, Any]]
    tasks: list[str]
    curves: list[RunCurve] = field(default_factory=list)  # per run directory given (curve.py)
    index: list[list[Any]] = field(default_factory=list)  # per record: iteration, split, task, sample, status, ...
    bodies: list[str] = field(default_factory=list)  # per record: JSON text of its viewer body
    systems: list[str] = field(default_factory=list)
    l_thr: int = 10
    t_max: int = 40


def discover(inputs: list[str]) -> list[Source]:
    """Run directories expand to their iter-k/ folders (by k); files are one iteration each.

    With several run directories, each iteration's label names its directory ("base/iter-0", "run/iter-0"), so
    two runs' iter-0 stay apart (make paper-mini reports the base eval's directory beside the run's).
    """
    if not inputs:
        raise InputError(None, None, None, "give an RL run directory (iter-k/ folders) or graded JSONL files")
    dirs = [item for item in inputs if Path(item).is_dir()]
    names = [Path(d).resolve().name for d in dirs]
    unique = len(set(names)) == len(names)
    out: list[Source] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            name = p.resolve().name if unique else item.rstrip("/")
            prefix = "" if len(dirs) < 2 else f"{name}/"
            iters = sorted((int(m.group(1)), d) for d in p.iterdir() if d.is_dir() and (m := _ITER.match(d.name)))
            found = [_iteration(d, k, prefix) for k, d in iters]
            for s in found:
                s.run, s.run_name = item, name
            found = [s for s in found if s.graded or s.eval]
            if not found:
                raise InputError(item, None, None, "no iter-k/graded.jsonl or iter-k/eval-graded.jsonl below it")
            out += found
        elif p.is_file() or item == "-":
            out.append(Source(label=p.name if item != "-" else "<stdin>", graded=item))
        elif p.exists():  # a FIFO or a device: opening one with no writer would wait forever
            raise InputError(
                item, None, None, f"is {_kind(p)}, not a graded JSONL file or a run directory ('-' reads stdin)"
            )
        else:
            raise InputError(item, None, None, "no such file or directory")
    return out


def _kind(p: Path) -> str:
    """`a FIFO`, `a character device`, ... for a path that is neither a file nor a directory."""
    mode = p.stat().st_mode
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((what for test, what in kinds if test(mode)), "a special file")


def _iteration(d: Path, k: int, prefix: str = "") -> Source:
    def have(name: str) -> str | None:
        return str(d / name) if (d / name).is_file() and (d / name).stat().st_size > 0 else None

    return Source(
        f"{prefix}iter-{k}",
        have("graded.jsonl"),
        have("eval-graded.jsonl"),
        have("dapo.json"),
        have("metrics.jsonl"),
        k=k,
    )


def _load_json(path: str) -> dict[str, Any]:
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(path, None, None, f"not a readable JSON summary: {e}") from None
    if not isinstance(obj, dict):
        raise InputError(path, None, None, "expected a JSON object (a swerl dapo summary)")
    return check_dapo_summary(path, obj)


def build_report(
    inputs: list[str],
    *,
    l_thr: int | None = None,
    t_max: int | None = None,
    max_chars: int = 6000,
    title: str | None = None,
    log: Callable[[str], None] | None = None,
) -> ReportData:
    """Read every input once and aggregate it (see aggregate.py for the definitions)."""
    sources = discover(inputs)
    summaries = [_load_json(s.dapo) if s.dapo else None for s in sources]
    first = next((s for s in summaries if s), None)
    lt, tm = penalty_settings(first, 10, 40)
    lt, tm = l_thr if l_thr is not None else lt, t_max if t_max is not None else tm
    data = ReportData(title or ", ".join(inputs), [], [], {}, [], l_thr=lt, t_max=tm)
    task_ids: dict[str, int] = {}
    systems: dict[str, int] = {}
    global_step = 0
    tallies: dict[str, dict[int, Tally]] = {}  # run directory -> k -> its rollouts' counts (the learning curve)
    for i, (src, summary) in enumerate(zip(sources, summaries, strict=True)):
        it: dict[str, Any] = {"label": src.label, "train": None, "eval": None, "dapo": dapo_stats(summary)}
        for split, path in ((0, src.graded), (1, src.eval)):
            if path is None:
                continue
            samples = []
            codes: Counter[str] = Counter()
            tally = tallies.setdefault(src.run, {}).setdefault(src.k, Tally()) if src.run and not split else None
            for loc in read_records(path):
                s = read_graded(loc)
                if tally is not None:
                    tally.add(s)
                samples.append(s.detached())  # the statistics need the view, not the record
                tid = task_ids.setdefault(s.instance_id, len(task_ids))
                grade = loc.obj.get("grade") or {}
                codes.update(audit_codes(grade))
                row = [i, split, tid, s.sample or 0, s.status, s.reward, s.turns, s.exit_status]
                data.index.append([*row, tamper_flag(grade)])
                body = body_of(loc.obj, systems, max_chars)
                data.bodies.append(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
            it["eval" if split else "train"] = {
                **split_stats(samples, lt, tm),
                "audit_codes": dict(sorted(codes.items())),
            }
            if log:
                log(f"report: {path}: {len(samples)} records")
        if src.metrics:
            for loc in read_records(src.metrics):
                if isinstance(loc.obj.get("step"), int):
                    global_step += 1
                    data.steps.append({**loc.obj, "iteration": i, "global_step": global_step})
        data.iterations.append(it)
    runs = {src.run: src.run_name for src in sources if src.run}
    for run, name in runs.items():
        per_k = {s.k: summary for s, summary in zip(sources, summaries, strict=True) if s.run == run}
        data.curves.append(run_curve(name, run, tallies.get(run, {}), per_k))
    data.tasks = list(task_ids)
    data.systems = list(systems)
    data.heat = {split: heat_map(data.iterations, split) for split in ("train", "eval")}
    return data
