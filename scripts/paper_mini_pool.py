"""A DAPO pool of fresh tasks for `make paper-mini PM_POOL_SRC=...`: the candidate tasks (another `swerl tasks synth`
run on the same library, e.g. other mutators or another seed) whose function is not in the run's held-out split and
which are not one of its tasks already (the demonstrations RFT memorised), so the held-out split stays unseen.

    python scripts/paper_mini_pool.py CANDIDATES.jsonl TASKS_DIR OUT.jsonl

TASKS_DIR is the paper-mini task family (`PM_SRC`, e.g. .cache/synth/toolz-located: train.jsonl, heldout.jsonl).
Kept lines are written byte-for-byte, in input order; a bad line is one line naming file and line (exit 2).
"""

from __future__ import annotations

import sys
from pathlib import Path

from paper_mini_split import function_of, read_rows, write_lines

from swerl_cli.core.errors import InputError


def main(candidates: str, tasks_dir: str, out: str) -> int:
    try:
        heldout = read_rows(str(Path(tasks_dir) / "heldout.jsonl"))
        known = heldout + read_rows(str(Path(tasks_dir) / "train.jsonl"))
        rows = read_rows(candidates)
    except InputError as e:
        print(e, file=sys.stderr)
        return 2
    held_functions = {function_of(row) for _, row in heldout}
    known_ids = {row.get("instance_id") for _, row in known}
    kept = [
        line for line, row in rows if function_of(row) not in held_functions and row.get("instance_id") not in known_ids
    ]
    write_lines(out, kept)
    print(
        f"paper-mini pool: {len(kept)} of {len(rows)} candidates kept (not a held-out function, not a known task)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
