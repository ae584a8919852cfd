"""Record builders shared by the streams tests."""

from __future__ import annotations

from typing import Any

import orjson


def graded(
    iid: str,
    sample: int,
    resolved: bool,
    *,
    run: str = "r1",
    patch: str | None = None,
    turns: int = 5,
    tokens: int = 1000,
    status: str | None = None,
    exit_status: str = "submitted",
    repo: str = "acme/w",
    **extra: Any,
) -> dict[str, Any]:
    """A minimal graded trajectory record."""
    status = status or ("resolved" if resolved else "unresolved")
    reward = None if status == "error" else (1.0 if resolved else 0.0)
    return {
        "schema": "swerl.graded/1",
        "id": f"{iid}/{run}/{sample}",
        "instance_id": iid,
        "run": run,
        "sample": sample,
        "task": {"instance_id": iid, "repo": repo},
        "patch": patch if patch is not None else f"diff {iid} {sample}",
        "exit_status": exit_status,
        "stats": {"turns": turns, "tokens_total": tokens},
        "grade": {"status": status, "resolved": resolved, "reward": reward},
        **extra,
    }


def jsonl(records: list[dict[str, Any]]) -> bytes:
    """Serialise records as JSONL bytes."""
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def ids(out: bytes) -> list[str]:
    """The `id` of every output line, asserting each line is a JSON object."""
    result = []
    for line in out.splitlines():
        obj = orjson.loads(line)
        assert isinstance(obj, dict)
        result.append(obj["id"])
    return result
