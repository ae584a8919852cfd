"""Token bookkeeping for token-exact trajectories, and the prefix-preservation check of a chat template.

Training rebuilds one sequence per trajectory without re-tokenising (COMMON/DESIGN §2):
    input_ids = turns[0].prompt_token_ids ++ turns[0].token_ids ++ turns[1].delta_token_ids ++ turns[1].token_ids ...
That works only if the prompt of turn k starts with the prompt of turn k-1 followed by its sampled tokens;
`TokenBook` checks this per turn (`prefix_ok`) and keeps the full prompt whenever it fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class TokenBook:
    """Per-episode state: the server's previous prompt followed by the tokens it sampled."""

    prev: list[int] | None = None
    turns: int = 0

    def turn_fields(self, prompt_ids: list[int] | None, token_ids: list[int] | None) -> dict[str, Any]:
        """`prompt_token_ids`, `delta_token_ids` and `prefix_ok` for a new turn, updating the book.

        >>> b = TokenBook(); b.turn_fields([1, 2], [3])["prefix_ok"], b.turn_fields([1, 2, 3, 4], [5])
        (True, {'prompt_token_ids': None, 'delta_token_ids': [4], 'prefix_ok': True})
        """
        first, prev = self.turns == 0, self.prev
        self.turns += 1
        if prompt_ids is None or token_ids is None:
            # A backend without token ids (gold, replay, a plain OpenAI server): nothing can be rebuilt.
            self.prev = None
            return {"prompt_token_ids": prompt_ids, "delta_token_ids": None, "prefix_ok": False}
        self.prev = list(prompt_ids) + list(token_ids)
        if first:
            return {"prompt_token_ids": list(prompt_ids), "delta_token_ids": None, "prefix_ok": True}
        if prev is not None and prompt_ids[: len(prev)] == prev:
            return {"prompt_token_ids": None, "delta_token_ids": list(prompt_ids[len(prev) :]), "prefix_ok": True}
        return {"prompt_token_ids": list(prompt_ids), "delta_token_ids": None, "prefix_ok": False}


def rebuild_sequence(turns: list[dict[str, Any]]) -> list[int]:
    """The documented training sequence of a trajectory's turns; ValueError if a turn breaks the prefix."""
    seq: list[int] = []
    for k, t in enumerate(turns):
        if k == 0:
            seq += t["prompt_token_ids"]
        elif not t.get("prefix_ok"):
            raise ValueError(f"turn {k}: prefix_ok is false, the sequence cannot be rebuilt linearly")
        else:
            seq += t["delta_token_ids"]
        seq += t["token_ids"]
    return seq


@dataclass(frozen=True, slots=True)
class TemplateReport:
    """Outcome of `check_prefix_preserving`: ok, or the first turn and token position that differ."""

    ok: bool
    turns_checked: int
    turn: int | None = None
    position: int | None = None
    expected: list[int] | None = None
    got: list[int] | None = None


def check_prefix_preserving(
    render: Callable[[list[dict[str, Any]], bool], list[int]],
    encode_reply: Callable[[str], list[int]],
    messages: list[dict[str, Any]],
) -> TemplateReport:
    """Render the conversation turn by turn: the prompt before assistant turn k+1 must start with the prompt
    before turn k followed by turn k's reply as the model would have sampled it (`encode_reply`: text + stop)."""
    idx = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    checked = 0
    for k in range(len(idx) - 1):
        before = render(messages[: idx[k]], True)
        expected = before + encode_reply(messages[idx[k]].get("content") or "")
        nxt = render(messages[: idx[k + 1]], True)
        checked += 1
        if nxt[: len(expected)] != expected:
            pos = next(
                (i for i, (a, b) in enumerate(zip(expected, nxt, strict=False)) if a != b), min(len(expected), len(nxt))
            )
            return TemplateReport(False, checked, k + 1, pos, expected[pos : pos + 8], nxt[pos : pos + 8])
    return TemplateReport(True, checked)


# A short agent conversation for `swerl check-template`: reasoning with <think> blocks (which some templates strip
# from earlier turns), command fences, observations with the shell prompt, and a unicode character.
SAMPLE_CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are an autonomous software engineer working in a shell."},
    {"role": "user", "content": "# ISSUE DESCRIPTION\nparse() drops the last field.\n(Current directory: /testbed)"},
    {
        "role": "assistant",
        "content": "<think>Find parse first.</think>\nLet me look.\n```command\ngrep -rn 'def parse' .\n```",
    },
    {
        "role": "user",
        "content": "./csv.py:12:def parse(line):\n(Current directory: /testbed, current file: n/a) bash-$",
    },
    {"role": "assistant", "content": "<think>Open it.</think>\nOpening the file.\n```command\nopen csv.py 12\n```"},
    {"role": "user", "content": "[File: /testbed/csv.py (20 lines total)]\n12:def parse(line):  # naïve\nbash-$"},
    {"role": "assistant", "content": "Done.\n```command\nsubmit\n```"},
]
