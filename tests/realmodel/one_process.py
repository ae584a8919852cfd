"""Run swerl commands one after another in ONE Python process, so torch, transformers and DeepSpeed are imported
and the process group is started once (the real-model test's RFT step, DAPO step and reload probe).

    python -m tests.realmodel.one_process '[["rft", ...], ["dapo", ...], ["refresh", "reload", URL, CKPT]]'

Each command is the CLI's own entry (`swerl_cli.cli.build`, or `swerl_cli.policy.refresh.main` for "refresh")
with the arguments a user types. Their stdout is kept apart: after each command a line `== exit N` (N its exit
status); a failing command ends the run with its status. The process group stays up between commands (DeepSpeed
caches its groups, so a group destroyed and rebuilt in one process is not usable) and is destroyed at the end.
"""

from __future__ import annotations

import json
import sys


def run(args: list[str]) -> int:
    """One command's exit status."""
    if args[0] == "refresh":
        from swerl_cli.policy.refresh import main as refresh

        return refresh(args[1:])
    from swerl_cli.cli import build

    try:
        result = build([args[0]])(args=args, standalone_mode=False)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return result if isinstance(result, int) else 0


def main(argv: list[str]) -> int:
    from swerl_cli.training import dist

    shutdown, dist.shutdown = dist.shutdown, lambda: None
    try:
        for args in json.loads(argv[0]):
            code = run(args)
            print(f"== exit {code}", flush=True)
            if code:
                return code
    finally:
        shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
