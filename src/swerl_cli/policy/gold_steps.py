"""`gold-steps` policy: the gold patch acted out as readable steps (open, edit, run the failing test, submit).

The `gold` policy applies the patch in one base64 command, which validates an environment but teaches a model
nothing about how a fix is made. This one turns each changed block of the patch into the agent's own editor
commands, so the trajectory reads like a solution a model could have written:

    open toolz/itertoolz.py 351
    edit --file toolz/itertoolz.py 351:351 '    return itertools.islice(seq, n, None)'
    python3 -m pytest -q toolz/tests/test_itertoolz.py::test_drop
    submit

Blocks are edited bottom-up, so the line numbers shown are valid when each edit runs. A patch that the editor
cannot express (a new, deleted, renamed or binary file) falls back to the `gold` policy's single apply.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from swerl_cli.policy.base import Completion, EpisodeInfo
from swerl_cli.policy.gold import GoldPolicy, _action

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
MAX_TESTS = 1


@dataclass(frozen=True, slots=True)
class Block:
    """One contiguous change: old lines start..start+n_old-1 of `path` become `new` (n_old 0: insert before)."""

    path: str
    start: int
    n_old: int
    new: tuple[str, ...]


def patch_blocks(patch: str) -> list[Block] | None:
    """The contiguous changed blocks of a unified diff, in patch order; None when one needs more than the editor.

    >>> patch_blocks("--- a/m.py\\n+++ b/m.py\\n@@ -2,3 +2,3 @@\\n x\\n-y = 1\\n+y = 2\\n z\\n")
    [Block(path='m.py', start=3, n_old=1, new=('y = 2',))]
    """
    blocks: list[Block] = []
    path: str | None = None
    old_line = 0
    cur: dict[str, Any] | None = None
    for raw in patch.splitlines():
        if raw.startswith(("new file mode", "deleted file mode", "rename from", "Binary files", "GIT binary")):
            return None
        if raw.startswith("--- "):
            continue
        if raw.startswith("+++ "):
            target = raw[4:].strip()
            if target == "/dev/null":
                return None
            path = target[2:] if target.startswith(("a/", "b/")) else target  # git's prefixes (also reversed)
            continue
        m = _HUNK.match(raw)
        if m:
            _close(blocks, cur)
            cur, old_line = None, int(m.group(1))
            continue
        if path is None or not raw or raw[0] not in " +-":
            _close(blocks, cur)
            cur = None
            continue
        if raw[0] == " ":
            _close(blocks, cur)
            cur, old_line = None, old_line + 1
            continue
        if cur is None:
            cur = {"path": path, "start": old_line, "n_old": 0, "new": []}
        if raw[0] == "-":
            cur["n_old"] += 1
            old_line += 1
        else:
            cur["new"].append(raw[1:])
    _close(blocks, cur)
    return blocks or None


def _close(blocks: list[Block], cur: dict[str, Any] | None) -> None:
    if cur is not None:
        blocks.append(Block(cur["path"], cur["start"], cur["n_old"], tuple(cur["new"])))


def quote(text: str) -> str:
    """Shell-quote for reading: single quotes when possible, then double quotes, then shlex's general form.

    >>> quote("x = 'a'")
    '"x = \\'a\\'"'
    """
    if "'" not in text:
        return f"'{text}'"
    if not re.search(r'["$`\\!]', text):
        return f'"{text}"'
    return shlex.quote(text)


def steps(task: dict[str, Any]) -> list[tuple[str, str]] | None:
    """(reasoning, command) per turn for `task`'s gold patch; None when the patch needs the plain apply."""
    blocks = patch_blocks(str(task.get("patch") or ""))
    if not blocks:
        return None
    out: list[tuple[str, str]] = []
    for b in sorted(blocks, key=lambda b: (b.path, -b.start)):
        end = b.start + b.n_old - 1
        out.append((f"I look at {b.path} around line {b.start}.", f"open {b.path} {b.start}"))
        what = f"line {b.start}" if b.n_old == 1 else f"lines {b.start}-{end}" if b.n_old else f"before line {b.start}"
        edit = f"edit --file {b.path} {b.start}:{end}"
        out.append((f"I fix {what}.", f"{edit} {quote(chr(10).join(b.new))}" if b.new else edit + " ''"))
    tests = [t for t in task.get("FAIL_TO_PASS") or [] if isinstance(t, str) and "::" in t][:MAX_TESTS]
    if tests:
        out.append(("I run the failing test.", "python3 -m pytest -q " + " ".join(shlex.quote(t) for t in tests)))
    out.append(("The fix is done; submitting.", "submit"))
    return out


class GoldStepsPolicy(GoldPolicy):
    """The gold patch as open / edit / test / submit turns (see the module docstring)."""

    name = "gold-steps"

    def play(self, episode: EpisodeInfo, turn: int, tools: list[dict[str, Any]] | None) -> Completion:
        """Turn `turn` of this episode's scripted steps (the plain gold apply when the patch needs it)."""
        plan = steps(episode.task)
        if plan is None:
            return super().play(episode, turn, tools)
        text, command = plan[min(turn, len(plan) - 1)]
        return _action(text, command, tools)
