"""The RL learning curve of `swerl report` (issue 41): per iteration k of each run directory, numbers of the
rollouts of checkpoint k, of the update k -> k+1 and of the forward-only probe of checkpoint k. Pure Python, no HTML.

Definitions (docs/report.md "Learning curve"; the same as scripts/paper_mini_gain_table.py's learning curve):
- pass rate +- SE: resolved / all records of iter-k/graded.jsonl (the active pool's samples; a grade error counts as
  not resolved), SE = sample std (ddof 1) / sqrt(n).
- submit share: records whose exit_status is "submitted" / all; submit precision: resolved / submitted.
- format errors per turn: sum of stats.format_errors / sum of stats.turns.
- groups kept / all, samples kept, optimizer steps, optimizer start: iter-k/dapo.json (counts.groups minus
  counts.groups_dropped, counts.samples_kept, steps, config.dapo.optimizer_start).
- probe: iter-k/probe.json (scripts/paper_mini_probe.py): gold_edit_logprob (mean log p of the gold edit turns),
  gold_edit_delta (its change from the reference), frame_drift (mean |change of log p| on command-frame tokens).
  Checkpoint 0's probe may live outside the run: without iter-0/probe.json, a `dapo-s<seed>` directory of
  `make paper-mini-gain` takes its sibling `rft/probe.json` (the RFT checkpoint, which iteration 0 samples).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swerl_cli.core.config import short
from swerl_cli.core.errors import InputError
from swerl_cli.streams.graded import GradedRecord
from swerl_cli.streams.records import require

_ITER = re.compile(r"^iter-(\d+)$")
_SEED_DIR = re.compile(r"^dapo-s\d+$")
PROBE_NUMBERS = (
    "gold_edit_logprob",
    "gold_edit_delta",
    "gold_action_logprob",
    "gold_delta",
    "frame_drift",
    "frame_delta",
)
PROBE_TEXTS = ("label", "checkpoint", "reference")


@dataclass(slots=True)
class Tally:
    """Counts over one iteration's rollouts, fed one record at a time (build.py's single pass)."""

    n: int = 0
    resolved: int = 0
    submitted: int = 0
    submitted_resolved: int = 0
    turns: int = 0
    format_errors: int = 0

    def add(self, s: GradedRecord) -> None:
        """Count one graded record; a stats.format_errors that is not an integer is a located InputError."""
        stats = isinstance(s.loc.obj.get("stats"), dict)
        fmt = require(s.loc, "stats.format_errors", int, optional=True) if stats else None
        self.n += 1
        self.resolved += int(s.resolved)
        submitted = s.exit_status == "submitted"
        self.submitted += int(submitted)
        self.submitted_resolved += int(submitted and s.resolved)
        self.turns += s.turns or 0
        self.format_errors += fmt or 0

    def numbers(self) -> dict[str, Any]:
        """The rollouts' numbers of the module docstring (None where the denominator is 0)."""
        n, r = self.n, self.resolved
        rate = r / n if n else None
        sem = math.sqrt(rate * (1 - rate) / (n - 1)) if rate is not None and n > 1 else (0.0 if n else None)
        return {
            "rollouts": n,
            "resolved": r,
            "pass": rate,
            "pass_sem": sem,
            "submitted": self.submitted,
            "submit_share": self.submitted / n if n else None,
            "submit_precision": self.submitted_resolved / self.submitted if self.submitted else None,
            "turns": self.turns,
            "format_errors": self.format_errors,
            "format_error_rate": self.format_errors / self.turns if self.turns else None,
        }


def update_numbers(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """The update's numbers of a dapo.json already checked by aggregate.check_dapo_summary; None without one."""
    if not summary:
        return None
    counts = summary.get("counts") or {}
    groups, dropped = counts.get("groups"), counts.get("groups_dropped")
    start = ((summary.get("config") or {}).get("dapo") or {}).get("optimizer_start")
    if start is None:  # an older summary shape: a top-level "dapo" block
        start = (summary.get("dapo") or {}).get("optimizer_start") if isinstance(summary.get("dapo"), dict) else None
    return {
        "groups": groups,
        "groups_kept": None if groups is None else groups - (dropped or 0),
        "samples_kept": counts.get("samples_kept"),
        "steps": summary.get("steps"),
        "optimizer_start": start if isinstance(start, str) else None,
    }


def load_probe(path: str) -> dict[str, Any]:
    """One probe.json: a JSON object whose numbers are finite numbers or null; else one InputError naming the file
    and the field (exit 3), as a malformed dapo.json is."""
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(path, None, None, f"not a readable JSON probe record: {e}") from None
    if not isinstance(obj, dict):
        raise InputError(path, None, None, "expected a JSON object (a probe record of scripts/paper_mini_probe.py)")
    for key in PROBE_NUMBERS:
        v = obj.get(key)
        ok = v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))
        if not ok:
            raise InputError(path, None, key, f"expected a finite number or null, got {short(v)}")
    for key in PROBE_TEXTS:
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise InputError(path, None, key, f"expected a string, got {short(obj[key])}")
    return {key: obj.get(key) for key in (*PROBE_NUMBERS, *PROBE_TEXTS)} | {"path": path}


def _file(p: Path) -> str | None:
    return str(p) if p.is_file() and p.stat().st_size > 0 else None


def probe_paths(run: str) -> dict[int, str]:
    """k -> the probe.json of checkpoint k of one run directory (see the module docstring for k = 0)."""
    root = Path(run)
    found = {}
    for d in root.iterdir():
        m = _ITER.match(d.name)
        if m and d.is_dir() and (f := _file(d / "probe.json")):
            found[int(m.group(1))] = f
    if 0 not in found and _SEED_DIR.match(root.resolve().name):
        if f := _file(root.resolve().parent / "rft" / "probe.json"):
            found[0] = f
    return dict(sorted(found.items()))


@dataclass
class RunCurve:
    """One run directory's learning curve: a point per k from 0 to the last k with any number."""

    name: str
    points: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def run_curve(name: str, run: str, tallies: dict[int, Tally], summaries: dict[int, dict[str, Any] | None]) -> RunCurve:
    """Merge a run's per-iteration tallies (k -> rollouts) and dapo summaries (k -> dapo.json) with its probes."""
    probes = {k: load_probe(p) for k, p in probe_paths(run).items()}
    ks = set(tallies) | {k for k, s in summaries.items() if s} | set(probes)
    curve = RunCurve(name)
    for k in range(max(ks) + 1 if ks else 0):
        tally = tallies.get(k)
        point = {
            "k": k,
            "rollouts": tally.numbers() if tally and tally.n else None,
            "update": update_numbers(summaries.get(k)),
            "probe": probes.get(k),
        }
        curve.points.append(point)
    missing = [
        what
        for what, key in (("iter-k/graded.jsonl", "rollouts"), ("iter-k/dapo.json", "update"), ("probe.json", "probe"))
        if not any(p[key] for p in curve.points)
    ]
    if len(missing) == 3:  # an eval-only directory (make paper-mini's RUN/base)
        curve.notes.append(f"{name}: no rollouts, updates or probes: no learning curve")
    else:
        curve.notes += [f"{name}: no {what}: its curves are skipped" for what in missing]
    if 0 in probes and Path(probes[0]["path"]).parent.name != "iter-0":
        curve.notes.append(f"{name}: checkpoint 0's probe is {probes[0]['path']}")
    return curve
