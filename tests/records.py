"""Record builders and JSONL helpers shared by every test package (one place, so the contract is built once)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from swerl_cli.streams.records import Located

UNBIASED = {
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": -1,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "max_new_tokens": 8,
    "seed": 0,
}


def graded(
    iid: str = "t1",
    sample: int = 0,
    resolved: bool = False,
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
    """A minimal graded trajectory record (swerl.graded/1); `extra` fields are added as they are."""
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


def rollout(
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
    """A graded record with the policy and per-turn token ids a trainer reads; `token_ids` gives one list per turn
    (the deltas between turns are [7, 8])."""
    token_ids = token_ids or [[5, 6, 2]] * turns
    turn_recs = [
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
        for k, ids in enumerate(token_ids)
    ]
    rec = graded(iid, sample, resolved, run=run, patch="", turns=turns, status=status, exit_status=exit_status)
    rec["stats"]["format_errors"] = 0
    policy = {"backend": "hf", "model": "m", "version": version, "sampling": sampling or dict(UNBIASED)}
    rec.update(policy={**policy, "biased_sampling": biased}, messages=[], turns=turn_recs, error=None)
    return rec


def trajectory(task: dict[str, Any], tag: str, patch: str) -> dict[str, Any]:
    """A trajectory record embedding `task`, with an unknown field that every stage must pass through."""
    return {
        "schema": "swerl.trajectory/1",
        "id": f"{task['instance_id']}/{tag}",
        "instance_id": task["instance_id"],
        "run": tag,
        "sample": 0,
        "task": task,
        "patch": patch,
        "extra_field": [1, {"kept": True}],
    }


def located(records: list[dict[str, Any]], source: str = "graded.jsonl") -> list[Located]:
    """Wrap records as the JSONL reader would, lines numbered from 1."""
    return [Located(source, i + 1, r) for i, r in enumerate(records)]


def jsonl(records: list[dict[str, Any]]) -> bytes:
    """Serialise records as JSONL bytes."""
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    """Write records to `path` as JSONL (parent directories created); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(jsonl(records))
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file as an object."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def ids(out: bytes) -> list[str]:
    """The `id` of every output line, asserting each line is a JSON object."""
    result = []
    for line in out.splitlines():
        obj = orjson.loads(line)
        assert isinstance(obj, dict)
        result.append(obj["id"])
    return result


@contextlib.contextmanager
def registered(registry: Any, name: str, target: str) -> Iterator[None]:
    """`name` registered as `target` ("module:Class") for the block: a backend defined in a test module (registry:
    a `core.plugins.Registry`, such as `IMPORTERS` or `FORMATS`)."""
    registry.register(name, target)
    try:
        yield
    finally:
        registry.pop(name, None)


def invoke_on_rows(tmp_path: Path, command: list[str], rows: list[dict[str, Any]], *flags: str) -> tuple[Any, list]:
    """`swerl COMMAND ROWS.jsonl -o OUT FLAGS` in this process (so what the test registered applies): the result
    and the records written."""
    from typer.testing import CliRunner

    from swerl_cli.cli import app

    out = tmp_path / "out.jsonl"
    src = write_jsonl(tmp_path / "rows.jsonl", rows)
    res = CliRunner().invoke(app, [*command, str(src), "-o", str(out), *flags])
    return res, read_jsonl(out) if out.exists() else []
