"""The active pool of one RL iteration (`make rl ACTIVE_POOL=1`): the tasks of TASKS.jsonl that are neither always
solved nor never solved over the graded rollouts so far (training/active_pool.py); unseen tasks stay in.

    python scripts/active_pool.py TASKS.jsonl OUT.jsonl [GRADED.jsonl ...]

OUT is written whole (a temporary file renamed into place); the counts go to stderr as one line. A bad record is one
stderr line naming file, line and field (exit 3); a wrong command line exits 2; no active task left exits 1 (the loop
stops there rather than collecting nothing).
"""

from __future__ import annotations

import os
import sys

from swerl_cli.core.errors import SwerlError
from swerl_cli.streams.jsonl import dumps, read_many, read_records
from swerl_cli.training.active_pool import active_tasks, solve_history


def main(tasks: str, out: str, graded: list[str]) -> int:
    try:
        history = solve_history(read_many(graded)) if graded else {}
        kept, counts = active_tasks(read_records(tasks), history)
    except SwerlError as e:
        print(f"active_pool: {e}", file=sys.stderr)
        return e.exit_code
    if not kept:
        print(
            f"active_pool: none of the {counts['tasks']} tasks of {tasks} is active ({counts['always_solved']} always "
            f"solved, {counts['never_solved']} never solved): nothing left to learn from; widen POOL",
            file=sys.stderr,
        )
        return 1
    tmp = f"{out}.tmp"
    with open(tmp, "wb") as fh:
        for loc in kept:
            fh.write(dumps(loc.obj))
    os.replace(tmp, out)
    print(
        f"active pool: {counts['kept']} of {counts['tasks']} tasks ({counts['unseen']} unseen); dropped "
        f"{counts['always_solved']} always solved, {counts['never_solved']} never solved over "
        f"{sum(len(v) for v in history.values())} graded rollouts",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
