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

Demonstrations of recovery (`--gold-mistakes P`): in a share P of the episodes (chosen from instance id and
sample, so a rerun picks the same ones) the first edit is made with one of the two mistakes small models make,
then corrected. The text is over-indented by four spaces, or, when it holds a single quote, wrapped naively in
single quotes (the shell drops the inner ones). The mistaken turn is marked `masked` (training gives it loss mask
0), so a model trained on the demonstration learns the correction that follows the editor's answer, not the
mistake. The correction reads that answer: refused (the editor's syntax check) or failed, the same range is
edited again; applied, the lines the mistake wrote are.
"""

from __future__ import annotations

import re
import shlex
import zlib
from dataclasses import dataclass
from typing import Any

from swerl_cli.core.config import flag
from swerl_cli.core.errors import ConfigError
from swerl_cli.policy import PolicyOptions
from swerl_cli.policy.base import Completion, EpisodeInfo, assistant_turns
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


def bottom_up(blocks: list[Block]) -> list[Block]:
    """The order the blocks are edited in: per file, last block first, so earlier line numbers stay valid."""
    return sorted(blocks, key=lambda b: (b.path, -b.start))


EDIT_APPLIED = "File updated."  # the first words of the editor's answer to an applied edit (swerl_tools.EDIT_DONE)
MISTAKE_TURN = 1  # with a mistake: turn 0 opens the first block, turn 1 is the mistaken edit, turn 2 corrects it


def mistaken(block: Block) -> tuple[str, str, str] | None:
    """(text as the mistaken edit writes it, how the correction names the mistake, what it does instead) for
    `block`; None when the block replaces nothing or inserts nothing (a pure insert or delete is left as it is)."""
    if not block.n_old or not block.new:
        return None
    text = "\n".join(block.new)
    if "'" in text:
        return f"'{text}'", "the shell dropped the single quotes inside my text", "I wrap the text in double quotes"
    deeper = "\n".join("    " + line if line else line for line in block.new)
    return quote(deeper), "my text was indented too deep", "I use the indentation the file has"


def steps(task: dict[str, Any], mistake: bool = False, applied: bool = False) -> list[tuple[str, str]] | None:
    """(reasoning, command) per turn for `task`'s gold patch; None when the patch needs the plain apply.

    `mistake`: the first edit is made wrongly at turn MISTAKE_TURN and corrected at the next (when `mistaken`
    allows it for the first block; `has_mistake` says); `applied`: the editor applied the mistaken edit.
    """
    blocks = patch_blocks(str(task.get("patch") or ""))
    if not blocks:
        return None
    out: list[tuple[str, str]] = []
    for i, b in enumerate(bottom_up(blocks)):
        end = b.start + b.n_old - 1
        out.append((f"I look at {b.path} around line {b.start}.", f"open {b.path} {b.start}"))
        what = f"line {b.start}" if b.n_old == 1 else f"lines {b.start}-{end}" if b.n_old else f"before line {b.start}"
        edit = f"edit --file {b.path} {b.start}:{end}"
        text = quote(chr(10).join(b.new)) if b.new else "''"
        right = f"{edit} {text}"
        wrong = mistaken(b) if mistake and i == 0 else None
        if wrong is None:
            out.append((f"I fix {what}.", right))
            continue
        out.append((f"I fix {what}.", f"{edit} {wrong[0]}"))
        if applied:  # the mistaken lines are in the file now: edit them
            redo = f"edit --file {b.path} {b.start}:{b.start + len(b.new) - 1} {text}"
            out.append((f"The edit went in, but {wrong[1]}. {wrong[2]} and edit the same lines again.", redo))
        else:
            out.append((f"The edit was not applied: {wrong[1]}. {wrong[2]} and edit {what} again.", right))
    tests = [t for t in task.get("FAIL_TO_PASS") or [] if isinstance(t, str) and "::" in t][:MAX_TESTS]
    if tests:
        out.append(("I run the failing test.", "python3 -m pytest -q " + " ".join(shlex.quote(t) for t in tests)))
    out.append(("The fix is done; submitting.", "submit"))
    return out


def has_mistake(task: dict[str, Any]) -> bool:
    """True when `steps(task, mistake=True)` has a mistaken edit (its first block can be edited wrongly)."""
    blocks = patch_blocks(str(task.get("patch") or "")) or []
    return bool(blocks) and mistaken(bottom_up(blocks)[0]) is not None


def picked(instance_id: str, sample: int, share: float) -> bool:
    """Whether episode (instance_id, sample) is one of the `share` that get a mistake (stable across runs)."""
    return zlib.crc32(f"{instance_id}/{sample}".encode()) % 10_000 < round(share * 10_000)


@dataclass(frozen=True, slots=True)
class GoldStepsOptions(PolicyOptions):
    """`--gold-mistakes P`: the share of episodes whose first edit is a corrected mistake (0: none)."""

    gold_mistakes: float = flag(
        0.0,
        "gold-steps: share of episodes (0-1) whose first edit is a typical mistake, corrected in the next turn; "
        "the mistaken turn is marked masked, so training learns the correction only.",
    )


class GoldStepsPolicy(GoldPolicy):
    """The gold patch as open / edit / test / submit turns (see the module docstring)."""

    name = "gold-steps"
    Options = GoldStepsOptions  # type: ignore[assignment]

    @classmethod
    def create(cls, options: GoldStepsOptions) -> GoldStepsPolicy:  # type: ignore[override]
        """Checks the share."""
        if not 0.0 <= options.gold_mistakes <= 1.0:
            raise ConfigError(f"field 'gold_mistakes': a share between 0 and 1, got {options.gold_mistakes}")
        return cls(options.gold_mistakes)

    def __init__(self, gold_mistakes: float = 0.0):
        self.gold_mistakes = gold_mistakes

    def describe(self) -> dict[str, Any]:
        """The `policy` record fields (and the share of mistakes, when there are any)."""
        return super().describe() | ({"gold_mistakes": self.gold_mistakes} if self.gold_mistakes else {})

    def respond(
        self, episode: EpisodeInfo, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> Completion:
        """The next scripted turn; with a mistake, the turn after it reads the editor's answer to it."""
        if not self.gold_mistakes:
            return super().respond(episode, messages, tools)
        mistake = picked(episode.instance_id, episode.sample, self.gold_mistakes) and has_mistake(episode.task)
        turn = assistant_turns(messages)
        applied = mistake and turn > MISTAKE_TURN and EDIT_APPLIED in _answer(messages, MISTAKE_TURN)
        comp = self.play(episode, turn, tools, mistake=mistake, applied=applied)
        comp.masked = mistake and turn == MISTAKE_TURN
        return comp

    def play(
        self,
        episode: EpisodeInfo,
        turn: int,
        tools: list[dict[str, Any]] | None,
        mistake: bool = False,
        applied: bool = False,
    ) -> Completion:
        """Turn `turn` of this episode's scripted steps (the plain gold apply when the patch needs it)."""
        plan = steps(episode.task, mistake, applied)
        if plan is None:
            return super().play(episode, turn, tools)
        text, command = plan[min(turn, len(plan) - 1)]
        return _action(text, command, tools)


def _answer(messages: list[dict[str, Any]], turn: int) -> str:
    """The text of the observation that followed assistant turn `turn` ("" when there is none yet)."""
    said = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    after = said[turn] + 1 if turn < len(said) else len(messages)
    content = messages[after].get("content") if after < len(messages) else None
    return content if isinstance(content, str) else ""
