"""`make paper-mini PM_DISJOINT=1`'s train split: the train tasks cut in two halves that share no function, one for
RFT's demonstrations and one for DAPO's pool, so DAPO trains on tasks the RFT checkpoint has never been shown (the
paper's RL stage runs on tasks its RFT data did not solve; without the cut every pool task is a memorised demo).

    python scripts/paper_mini_split.py TRAIN.jsonl SEED DEMOS_OUT POOL_OUT

Functions are read from each synth task's `synth.function` (a task without it is its own function) and assigned
with the same seeded rule `swerl tasks synth` uses for its train / held-out split.
"""

from __future__ import annotations

import sys
from pathlib import Path

from swerl_cli.core.errors import InputError
from swerl_cli.streams.jsonl import iter_raw, parse_raw
from swerl_cli.tasks.synth.plan import assign_splits


def function_of(row: dict) -> str:
    synth = row.get("synth")
    if isinstance(synth, dict) and isinstance(synth.get("function"), str):
        return str(synth["function"])
    return f"task:{row.get('instance_id')}"


def read_rows(path: str) -> list[tuple[bytes, dict]]:
    """(line, parsed object) per line, through swerl's own JSONL reader: a bad line raises one InputError naming
    file and line."""
    return [(raw.rstrip(b"\r\n"), parse_raw(name, n, raw).obj) for name, n, raw in iter_raw(path)]


def write_lines(path: str, lines: list[bytes]) -> None:
    """Write the lines byte-for-byte, replacing `path` only once all are written."""
    tmp = Path(f"{path}.tmp")
    tmp.write_bytes(b"".join(line + b"\n" for line in lines))
    tmp.replace(path)


def main(train: str, seed: str, demos_out: str, pool_out: str) -> int:
    try:
        rows = read_rows(train)
    except InputError as e:
        print(e, file=sys.stderr)
        return 2
    sides = assign_splits((function_of(row) for _, row in rows), 0.5, int(seed))
    halves: dict[str, list[bytes]] = {"heldout": [], "train": []}
    for line, row in rows:
        halves[sides[function_of(row)]].append(line)
    write_lines(demos_out, halves["train"])
    write_lines(pool_out, halves["heldout"])
    demos, pool = len(halves["train"]), len(halves["heldout"])
    print(f"paper-mini split: {demos} demo tasks, {pool} pool tasks, no function shared", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
