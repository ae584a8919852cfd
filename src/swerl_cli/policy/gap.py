"""The first-turn sampler-vs-trainer logprob gap of a collect run, per backend.

    python -m swerl_cli.policy.gap CKPT TRAJECTORIES.jsonl [--dtype float32]

For every trajectory whose first turn carries its prompt ids, sampled ids and logprobs, one transformers forward
pass of CKPT (fp32 by default: the trainer's dtype on CPU) over prompt + sampled ids gives the trainer's logprob of
each sampled token; the gap is |sampler - trainer| over all those tokens. Prints one JSON line per backend found:
`{"backend", "dtype", "trajectories", "tokens", "mean_abs", "max_abs"}`. `swerl dapo` reports the same quantity
over whole trajectories during its update (`logprob_diff`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any


def first_turn(record: dict[str, Any]) -> tuple[list[int], list[int], list[float]] | None:
    """(prompt ids, sampled ids, sampler logprobs) of the first turn, or None when any is missing."""
    turns = record.get("turns") or []
    if not turns:
        return None
    t = turns[0]
    prompt, ids, lps = t.get("prompt_token_ids"), t.get("token_ids"), t.get("logprobs")
    if not prompt or not ids or not lps or len(ids) != len(lps):
        return None
    return list(prompt), list(ids), [float(x) for x in lps]


def trainer_logprobs(model: Any, prompt: list[int], ids: list[int]) -> list[float]:
    """log p(ids[i] | prompt + ids[:i]) from one forward pass of a loaded transformers model."""
    import torch

    seq = prompt + ids
    with torch.no_grad():
        logits = model(torch.tensor([seq])).logits[0, len(prompt) - 1 : -1].float()
    lps = torch.log_softmax(logits, dim=-1)
    return [float(lps[i, t]) for i, t in enumerate(ids)]


def load_trainer(ckpt: str, dtype: str = "float32") -> Any:
    """The checkpoint as the trainer sees it: a transformers model in `dtype`, in eval mode."""
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(ckpt, dtype=getattr(torch, dtype)).eval()


def first_turn_gaps(model: Any, records: Iterable[dict[str, Any]], dtype: str = "float32") -> list[dict[str, Any]]:
    """One summary per backend of the records' first-turn gaps against `model` (from `load_trainer`)."""
    by_backend: dict[str, dict[str, Any]] = {}
    for r in records:
        turn = first_turn(r)
        if turn is None:
            continue
        prompt, ids, sampler = turn
        trainer = trainer_logprobs(model, prompt, ids)
        diffs = [abs(a - b) for a, b in zip(sampler, trainer, strict=True)]
        backend = str((r.get("policy") or {}).get("backend", "?"))
        s = by_backend.setdefault(backend, {"backend": backend, "dtype": dtype, "trajectories": 0, "tokens": 0,
                                            "sum": 0.0, "max_abs": 0.0})  # fmt: skip
        s["trajectories"] += 1
        s["tokens"] += len(diffs)
        s["sum"] += sum(diffs)
        s["max_abs"] = max(s["max_abs"], max(diffs))
    out = []
    for s in by_backend.values():
        s["mean_abs"] = s.pop("sum") / s["tokens"] if s["tokens"] else None
        out.append(s)
    return out


def main(argv: list[str]) -> int:
    args = list(argv)
    dtype = "float32"
    if "--dtype" in args:
        i = args.index("--dtype")
        dtype = args[i + 1]
        del args[i : i + 2]
    if len(args) != 2:
        sys.stderr.write("usage: python -m swerl_cli.policy.gap CKPT TRAJECTORIES.jsonl [--dtype float32]\n")
        return 2
    from swerl_cli.streams.jsonl import read_records

    records = (loc.obj for loc in read_records(args[1]))
    summaries = first_turn_gaps(load_trainer(args[0], dtype), records, dtype)
    if not summaries:
        sys.stderr.write(f"{args[1]}: no trajectory has first-turn prompt ids, token ids and logprobs\n")
        return 3
    for s in summaries:
        sys.stdout.write(json.dumps(s) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
