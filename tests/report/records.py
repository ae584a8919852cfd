"""Graded records with real-looking conversations, and an RL run directory in the layout of `make rl`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.records import graded as base_graded
from tests.records import write_jsonl

SYSTEM = "You fix bugs. Reply with one ```command block per turn.\n" + "Tools: bash, view, edit, submit.\n" * 20
PATCH = (
    "diff --git a/greet/core.py b/greet/core.py\n--- a/greet/core.py\n+++ b/greet/core.py\n@@ -1,3 +1,2 @@\n"
    " def greet(n):\n-    n = n.upper()\n     return f'Hello {n}'\n"
)


def graded(
    iid: str,
    sample: int,
    *,
    run: str = "iter-0",
    resolved: bool = False,
    turns: int = 2,
    status: str | None = None,
    exit_status: str = "submitted",
    tokens: int = 100,
    format_error_turn: int | None = None,
    observation: str = "file contents",
) -> dict[str, Any]:
    """One swerl.graded/1 record: system + issue, then `turns` assistant turns with observations between."""
    status = status or ("resolved" if resolved else "unresolved")
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Issue of {iid}: greet() shouts."},
    ]
    trecs = []
    for k in range(turns):
        last = k == turns - 1
        if k == format_error_turn:
            content = "I think the bug is in greet, but I forgot the block."
        else:
            cmd = "submit" if last else f"cat greet/core.py  # step {k}"
            content = f"Reasoning for turn {k} of {iid}.\n```command\n{cmd}\n```"
        trecs.append({"message_index": len(msgs), "token_ids": list(range(10 + k)), "logprobs": None,
                      "finish_reason": "stop", "format_error": k == format_error_turn})  # fmt: skip
        msgs.append({"role": "assistant", "content": content})
        if not last:
            msgs.append({"role": "user", "content": f"{observation} {k}"})
    rec = base_graded(
        iid, sample, resolved, run=run, patch=PATCH if resolved else "", turns=turns, tokens=tokens,
        status=status, exit_status=exit_status, repo="toy/greet",
    )  # fmt: skip
    rec.update(messages=msgs, turns=trecs, error="sandbox start failed" if exit_status == "error" else None)
    rec["stats"].update(format_errors=int(format_error_turn is not None), wall_s=2.0)
    case, other = "tests/test_greet.py::test_case", "tests/test_greet.py::test_other"
    rec["grade"].update(
        patch_applied=resolved,
        tests={
            "FAIL_TO_PASS": {"success": [case] if resolved else [], "failure": [] if resolved else [case]},
            "PASS_TO_PASS": {"success": [other], "failure": []},
            "status": {case: "PASSED" if resolved else "FAILED", other: "PASSED"},
        },
        log_tail="===== 2 passed in 0.01s =====" if resolved else "===== 1 failed, 1 passed =====",
        duration_s=1.5,
    )
    return rec


def dapo_summary(steps: int, groups: int, dropped: int, clip_low: float, clip_high: float, gap: float) -> dict:
    """The fields of a `swerl dapo` summary the report reads."""
    return {
        "schema": "swerl.summary/1",
        "kind": "dapo",
        "steps": steps,
        "counts": {"groups": groups, "groups_dropped": dropped, "samples_kept": 4 * (groups - dropped)},
        "reward_mean": 0.5,
        "clip_frac_low": clip_low,
        "clip_frac_high": clip_high,
        "logprob_diff": gap,
        "final_loss": -0.01,
        "timing": {"engine_init_s": 1.0, "old_logprob_pass_s": 0.5, "steps_s": 2.0, "save_s": 0.25},
        "config": {"l_thr": 2, "t_max": 4},
    }


def make_run(root: Path, solved: list[list[int]], g: int = 4) -> Path:
    """runs/iter-k for k < len(solved): tasks T0..Tn, `solved[k][t]` of `g` samples of task t resolved at k.

    Every iteration has a dapo.json and 2 metrics rows; iterations >= 1 also have an eval of one sample per task.
    """
    for k, per_task in enumerate(solved):
        d = root / f"iter-{k}"
        recs = [
            graded(f"T{t}", i, run=f"iter-{k}", resolved=i < c, turns=1 + (i % 3))
            for t, c in enumerate(per_task)
            for i in range(g)
        ]
        write_jsonl(d / "graded.jsonl", recs)
        (d / "dapo.json").write_text(json.dumps(dapo_summary(2, len(per_task), 1, 0.01 * k, 0.02 * k, 0.001)))
        rows = [{"step": s, "loss": 0.1 * (k + s), "clip_frac_low": 0.0} for s in (1, 2)]
        write_jsonl(d / "metrics.jsonl", rows)
        if k >= 1:
            ev = [graded(f"T{t}", 0, run=f"eval-{k}", resolved=c > g // 2) for t, c in enumerate(per_task)]
            write_jsonl(d / "eval-graded.jsonl", ev)
    return root
