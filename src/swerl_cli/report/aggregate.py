"""Numbers of one report: per-iteration statistics of graded records and DAPO summaries. Pure Python, no HTML.

Definitions (docs/report.md):
- pass@1 +- SEM: as `swerl eval` (evaluation.mean_sem over the records whose grade.status is not "error").
- reward: mean test reward (1 resolved, 0 otherwise) over valid records (neither grade.status nor exit_status is
  "error"); reward_penalised adds the step penalty of paper Eq. 4 with the run's l_thr / t_max, as `swerl dapo`
  computes R_final (so it equals dapo.json's reward_mean on the same rollouts).
- resolved_share: resolved records / all records (errors included in the denominator).
- per task: resolved / counted records (grade errors excluded) per instance_id.
- reasons: records per grade.reason (why a patch scored 0: timeout, results_untrusted, tampering_suspected, ...);
  audit_codes: findings per code of the static audit (grade.audit.tampering), counted once per record and code.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from swerl_cli.core.config import short
from swerl_cli.core.errors import InputError
from swerl_cli.evaluation.metrics import distribution, mean_sem
from swerl_cli.streams.graded import GradedRecord, step_penalty


def split_stats(samples: list[GradedRecord], l_thr: int = 10, t_max: int = 40) -> dict[str, Any]:
    """Statistics of one iteration's rollouts (or its eval records); see the module docstring."""
    counted = [s for s in samples if s.status != "error"]
    valid = [s for s in counted if s.exit_status != "error"]
    pass1, sem = mean_sem([1.0 if s.resolved else 0.0 for s in counted])
    test = [1.0 if s.resolved else 0.0 for s in valid]
    penalty = [step_penalty(s.turns, l_thr, t_max) if s.turns is not None else 0.0 for s in valid]
    penalised = [r + p for r, p in zip(test, penalty, strict=True)]
    per_task: dict[str, list[int]] = {}
    for s in counted:
        nc = per_task.setdefault(s.instance_id, [0, 0])
        nc[0] += 1
        nc[1] += int(s.resolved)
    return {
        "n": len(samples),
        "errors": len(samples) - len(counted),
        "pass1": None if not counted else pass1,
        "pass1_sem": None if not counted else sem,
        "reward": sum(test) / len(test) if test else None,
        "reward_penalised": sum(penalised) / len(penalised) if penalised else None,
        "resolved_share": sum(s.resolved and s.status != "error" for s in samples) / len(samples) if samples else None,
        "exit_status": dict(sorted(Counter(s.exit_status or "(none)" for s in samples).items())),
        "turns": distribution([s.turns for s in samples if s.turns is not None]),
        "tokens": distribution([s.tokens for s in samples if s.tokens is not None]),
        "episode_s": sum(s.wall_s for s in samples if s.wall_s is not None),
        "grade_s": sum(s.grade_s for s in samples if s.grade_s is not None),
        "per_task": dict(sorted(per_task.items())),
        "reasons": dict(sorted(Counter(s.reason for s in samples if s.reason).items())),
        "audit_codes": {},  # filled by the caller, which holds the records (audit_codes below)
    }


def audit_codes(grade: dict[str, Any]) -> list[str]:
    """The distinct finding codes of a grade's static audit (`grade.audit.tampering`); malformed entries skipped."""
    audit = grade.get("audit") if isinstance(grade, dict) else None
    found = audit.get("tampering") if isinstance(audit, dict) else None
    if not isinstance(found, list):
        return []
    return sorted({f["code"] for f in found if isinstance(f, dict) and isinstance(f.get("code"), str)})


_DAPO_NUMBERS = ("steps", "reward_mean", "clip_frac_low", "clip_frac_high", "logprob_diff", "final_loss")
_DAPO_COUNTS = ("groups", "groups_dropped", "samples_kept")


def check_dapo_summary(path: str, summary: dict[str, Any]) -> dict[str, Any]:
    """The fields of dapo.json the report reads have the shape `swerl dapo` writes (absent or null allowed);
    else one InputError naming the file and the field (exit 3), not a traceback while the page is drawn."""

    def bad(field: str, want: str, value: Any) -> InputError:
        return InputError(path, None, field, f"expected {want}, got {short(value)}")

    for key in _DAPO_NUMBERS:
        v = summary.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise bad(key, "a number", v)
    for key in ("counts", "timing", "config"):
        if summary.get(key) is not None and not isinstance(summary[key], dict):
            raise bad(key, "an object", summary[key])
    counts = summary.get("counts") or {}
    for key in _DAPO_COUNTS:
        v = counts.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise bad(f"counts.{key}", "an integer", v)
    if summary.get("warning") is not None and not isinstance(summary["warning"], str):
        raise bad("warning", "a string", summary["warning"])
    dapo = (summary.get("config") or {}).get("dapo")
    if dapo is not None and not isinstance(dapo, dict):
        raise bad("config.dapo", "an object", dapo)
    start = (dapo or {}).get("optimizer_start")
    if start is not None and not isinstance(start, str):  # the learning curve's optimizer start (curve.py)
        raise bad("config.dapo.optimizer_start", "a string", start)
    return summary


def dapo_stats(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """The fields of a `swerl dapo` summary (dapo.json) the report charts; None without one."""
    if not summary:
        return None
    counts = summary.get("counts") or {}
    timing = summary.get("timing") or {}
    return {
        "steps": summary.get("steps"),
        "groups": counts.get("groups"),
        "groups_dropped": counts.get("groups_dropped"),
        "groups_kept": None if counts.get("groups") is None else counts["groups"] - counts.get("groups_dropped", 0),
        "samples_kept": counts.get("samples_kept"),
        "reward_mean": summary.get("reward_mean"),
        "clip_frac_low": summary.get("clip_frac_low"),
        "clip_frac_high": summary.get("clip_frac_high"),
        "logprob_diff": summary.get("logprob_diff"),
        "final_loss": summary.get("final_loss"),
        "warning": summary.get("warning"),
        # `swerl dapo --follow`: optimizer steps between the sampling policy and the update, per group
        "staleness": summary.get("staleness") if isinstance(summary.get("staleness"), dict) else None,
        "timing": {k: v for k, v in timing.items() if isinstance(v, (int, float))},
    }


def penalty_settings(summary: dict[str, Any] | None, l_thr: int, t_max: int) -> tuple[int, int]:
    """The run's (l_thr, t_max): from the update's resolved config when there is one, else the given defaults."""
    cfg = (summary or {}).get("config") or {}
    lt, tm = cfg.get("l_thr"), cfg.get("t_max")
    return (lt if isinstance(lt, int) else l_thr), (tm if isinstance(tm, int) else t_max)


def heat_map(iterations: list[dict[str, Any]], split: str = "train") -> dict[str, Any]:
    """Per task, [resolved, counted] per iteration (None where the task had no record): rows sorted by task id."""
    tasks = sorted({t for it in iterations if it.get(split) for t in it[split]["per_task"]})
    rows = {t: [(it[split]["per_task"].get(t) if it.get(split) else None) for it in iterations] for t in tasks}
    return {"columns": [it["label"] for it in iterations], "rows": rows}
