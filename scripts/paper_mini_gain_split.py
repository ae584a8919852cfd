"""The pre-registered split of `make paper-mini-gain` (issue 41): one task family cut by function into a held-out
split, RFT's demonstration tasks and DAPO's pool, written once, before any training.

    python scripts/paper_mini_gain_split.py TASKS.jsonl SEED RUN_DIR [--heldout N] [--pool N] [--demos N] \
        [--demo-extra OTHER.jsonl ...]

Functions (`synth.function`; a task without one is its own function) are shuffled with SEED and dealt out whole: the
first ones to the held-out split until it holds at least N tasks (then its first N tasks in file order are kept, so
32 tasks x 4 samples make 128 episodes), the next ones to the pool until it holds N, the rest to the demonstrations
(at most N). No function has tasks in two parts; the family holds only the pool's bug kinds, so the held-out split
measures the kinds DAPO trains on. `--demo-extra` adds demonstration tasks from another family of the same library
(e.g. the located family of every bug kind), minus those of a held-out or pool function, after the family's own (the
RFT data need not be the pool's kinds; only the held-out split and the pool must share them). Written:
RUN_DIR/heldout.jsonl, RUN_DIR/pool.jsonl, RUN_DIR/demo-tasks.jsonl and RUN_DIR/split.json (each part's path,
sha256 and its instance ids' sha256 (`ids_sha256`, the same from any checkout), task count and count per bug kind
`synth.mutator`, the seed, the source's sha256). An existing split.json is
never rewritten (exit 1): a pre-registered split does not change under a run. A bad record is one stderr line naming
file and line (exit 3).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

from swerl_cli.core.errors import InputError
from swerl_cli.streams.jsonl import iter_raw, parse_raw


def function_of(row: dict) -> str:
    synth = row.get("synth")
    if isinstance(synth, dict) and isinstance(synth.get("function"), str):
        return str(synth["function"])
    return f"task:{row.get('instance_id')}"


def kind_of(row: dict) -> str:
    synth = row.get("synth")
    return str(synth.get("mutator")) if isinstance(synth, dict) and synth.get("mutator") else "unknown"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ids_sha256(path: Path) -> str:
    """The sha256 of a task file's instance ids, one per line in file order: the same for the same split from any
    checkout (the file's own sha256 also covers `repo_source`, an absolute path to the checkout's bundle)."""
    ids = [json.loads(line).get("instance_id", "") for line in path.read_text().splitlines() if line.strip()]
    return hashlib.sha256("".join(f"{i}\n" for i in ids).encode()).hexdigest()


def read_rows(path: str) -> list[tuple[bytes, dict]]:
    """(line, object) per line through swerl's JSONL reader: a bad line raises one InputError naming file and line."""
    return [(raw.rstrip(b"\r\n"), parse_raw(name, n, raw).obj) for name, n, raw in iter_raw(path)]


def deal(rows: list[tuple[bytes, dict]], seed: int, sizes: dict[str, int]) -> dict[str, list[tuple[bytes, dict]]]:
    """Whole functions to each part in order (heldout, pool, demos); `sizes` are minimum task counts (the
    held-out split is then cut to exactly its size, the demonstrations to at most theirs)."""
    by_fn: dict[str, list[tuple[bytes, dict]]] = {}
    for line, row in rows:
        by_fn.setdefault(function_of(row), []).append((line, row))
    keys = sorted(by_fn)
    random.Random(f"paper-mini-gain-split:{seed}").shuffle(keys)
    parts: dict[str, list[tuple[bytes, dict]]] = {"heldout": [], "pool": [], "demos": []}
    order = ["heldout", "pool", "demos"]
    for key in keys:
        part = next((p for p in order[:-1] if len(parts[p]) < sizes[p]), "demos")
        parts[part] += by_fn[key]
    parts["heldout"] = parts["heldout"][: sizes["heldout"]]
    parts["demos"] = parts["demos"][: sizes["demos"]]
    return parts


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tasks")
    p.add_argument("seed", type=int)
    p.add_argument("run_dir")
    p.add_argument("--heldout", type=int, default=32, help="held-out tasks (default 32)")
    p.add_argument("--pool", type=int, default=16, help="pool tasks (default 16)")
    p.add_argument("--demos", type=int, default=50, help="most demonstration tasks (default 50)")
    p.add_argument("--demo-extra", action="append", default=[], help="more demonstration task files (repeatable)")
    args = p.parse_args(argv)
    run = Path(args.run_dir)
    if (run / "split.json").exists():
        why = f"{run}/split.json exists; a pre-registered split is not rewritten"
        print(f"paper-mini-gain split: {why}", file=sys.stderr)
        return 1
    try:
        rows = read_rows(args.tasks)
        extra = [row for path in args.demo_extra for row in read_rows(path)]
    except InputError as e:
        print(e, file=sys.stderr)
        return e.exit_code
    sizes = {"heldout": args.heldout, "pool": args.pool, "demos": args.demos}
    parts = deal(rows, args.seed, sizes | {"demos": len(rows)})
    taken = {function_of(r) for p in ("heldout", "pool") for _, r in parts[p]}
    seen = {r.get("instance_id") for _, r in parts["demos"]}
    parts["demos"] += [
        (line, r) for line, r in extra if function_of(r) not in taken and r.get("instance_id") not in seen
    ]
    parts["demos"] = parts["demos"][: args.demos]
    short = [f"{k}: {len(parts[k])} of {sizes[k]}" for k in ("heldout", "pool") if len(parts[k]) < sizes[k]]
    if short or not parts["demos"]:
        why = ", ".join(short) or "no demos"
        print(f"paper-mini-gain split: {args.tasks} has too few tasks ({why})", file=sys.stderr)
        return 1
    run.mkdir(parents=True, exist_ok=True)
    files = {"heldout": "heldout.jsonl", "pool": "pool.jsonl", "demos": "demo-tasks.jsonl"}
    meta: dict = {
        "seed": args.seed,
        "source": {"path": args.tasks, "sha256": sha256(Path(args.tasks)), "tasks": len(rows)},
        "demo_extra": [{"path": p, "sha256": sha256(Path(p))} for p in args.demo_extra],
        "rule": "whole functions, shuffled with the seed, dealt to heldout, then pool, then demos",
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    for part, name in files.items():
        tmp = run / f".{name}.tmp"
        tmp.write_bytes(b"".join(line + b"\n" for line, _ in parts[part]))
        tmp.replace(run / name)
        meta[part] = {
            "path": str(run / name),
            "sha256": sha256(run / name),
            "ids_sha256": ids_sha256(run / name),
            "tasks": len(parts[part]),
            "functions": len({function_of(r) for _, r in parts[part]}),
            "by_kind": dict(sorted(Counter(kind_of(r) for _, r in parts[part]).items())),
        }
    tmp = run / ".split.json.tmp"
    tmp.write_text(json.dumps(meta, indent=1) + "\n")
    tmp.replace(run / "split.json")
    counts = [f"{k} {meta[k]['tasks']} tasks / {meta[k]['functions']} functions {meta[k]['by_kind']}" for k in files]
    print("paper-mini-gain split: " + ", ".join(counts), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
