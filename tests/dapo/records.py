"""Builders for graded trajectory records in the shared contract (swerl.graded/1), for the DAPO tests."""

from __future__ import annotations

from typing import Any

from swerl_cli.records import Located


def graded(
    iid: str = "t1",
    sample: int = 0,
    *,
    run: str = "iter-0",
    resolved: bool = False,
    turns: int = 1,
    status: str | None = None,
    exit_status: str = "submitted",
    version: str = "v0",
    sampling: dict[str, Any] | None = None,
    biased: bool = False,
    prompt: list[int] | None = None,
    token_ids: list[list[int]] | None = None,
    logprobs: list[list[float]] | None = None,
) -> dict[str, Any]:
    """One graded record; `token_ids` gives one list per turn (deltas between turns are [7, 8])."""
    token_ids = token_ids or [[5, 6, 2]] * turns
    turn_recs = []
    for k, ids in enumerate(token_ids):
        turn_recs.append(
            {
                "message_index": 2 + 2 * k,
                "prompt_token_ids": (prompt or [1, 3, 4]) if k == 0 else None,
                "delta_token_ids": None if k == 0 else [7, 8],
                "token_ids": list(ids),
                "logprobs": list(logprobs[k]) if logprobs else [-1.0] * len(ids),
                "finish_reason": "stop",
                "format_error": False,
                "prefix_ok": True,
                "n_prompt_tokens": 3,
                "latency_s": 0.0,
            }
        )
    status = status or ("resolved" if resolved else "unresolved")
    return {
        "schema": "swerl.graded/1",
        "id": f"{iid}/{run}/{sample}",
        "instance_id": iid,
        "run": run,
        "sample": sample,
        "policy": {
            "backend": "hf",
            "model": "m",
            "version": version,
            "sampling": sampling
            or {
                "temperature": 1.0,
                "top_p": 1.0,
                "top_k": -1,
                "min_p": 0.0,
                "repetition_penalty": 1.0,
                "max_new_tokens": 8,
                "seed": 0,
            },
            "biased_sampling": biased,
        },
        "messages": [],
        "turns": turn_recs,
        "patch": "",
        "exit_status": exit_status,
        "error": None,
        "stats": {"turns": turns, "format_errors": 0},
        "grade": {
            "status": status,
            "resolved": resolved,
            "reward": None if status == "error" else float(resolved),
        },
    }


def located(records: list[dict[str, Any]], source: str = "graded.jsonl") -> list[Located]:
    """Wrap records as the JSONL reader would, lines numbered from 1."""
    return [Located(source, i + 1, r) for i, r in enumerate(records)]
