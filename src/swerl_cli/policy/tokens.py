"""Token-in/token-out turns, token bookkeeping for token-exact trajectories, and the template prefix check.

Training rebuilds one sequence per trajectory without re-tokenising (DESIGN §12):
    input_ids = turns[0].prompt_token_ids ++ turns[0].token_ids ++ turns[1].delta_token_ids ++ turns[1].token_ids ...

Backends with token ids build every later prompt as tokens (`TurnPrompter`): the previous prompt, the ids it sampled,
the template's closing tokens the model did not emit itself (e.g. `<|im_end|>\n` after a turn cut by
`max_new_tokens`), then only the newly rendered messages. Such a turn is prefix-preserving by construction and its
`delta_token_ids` are the closing tokens plus the new messages. Backends without a tokenizer (a plain
OpenAI-compatible server) send chat messages; `TokenBook` then checks each turn (`prefix_ok`) and keeps the full
prompt whenever the server's rendering does not extend the previous prompt.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

# A render function: (messages, add_generation_prompt, tools) -> token ids; may be a coroutine function (a server).
Render = Callable[[list[dict[str, Any]], bool, list[dict[str, Any]] | None], "list[int] | Awaitable[list[int]]"]

# A stand-in conversation that ends with an assistant turn: the rendering of new messages is taken as the rendering
# of BASE + new minus the rendering of BASE, so its cost does not depend on the real conversation's length.
_BASE: list[dict[str, Any]] = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "u"},
    {"role": "assistant", "content": "a"},
]


@dataclass(slots=True)
class TokenState:
    """One episode's conversation as tokens: the last prompt followed by its sampled ids, and how many messages
    that covers (through the last assistant message). Lives in `EpisodeInfo.tokens`; the backend owns it."""

    ids: list[int] = field(default_factory=list)
    n_messages: int = 0
    pending: tuple[list[int], int] | None = None  # (prompt ids, messages) of the request in flight

    def commit(self, sampled: list[int]) -> None:
        """The turn in flight sampled `sampled`: the conversation now ends with it."""
        if self.pending is None:
            return
        prompt, n = self.pending
        prompt.extend(sampled)  # the prompt list is ours: extended in place, no copy of the context
        self.ids, self.n_messages, self.pending = prompt, n + 1, None


@dataclass(frozen=True, slots=True)
class TurnPrompt:
    """The prompt of one turn: the full ids (sent to the engine), the span new since the last sampled token
    (closing tokens + newly rendered messages; None on turn 0) and how many closing tokens open that span.

    On a token-in/token-out turn `ids` is the episode's own list, extended in place by the next commit (so no turn
    copies the context): use it for this turn's request and copy it to keep it."""

    ids: list[int]
    delta: list[int] | None
    n_closing: int = 0


class TurnPrompter:
    """Builds turn prompts token-in/token-out from a chat template (rendered locally or by a server).

    `probe()` (once per tools setting) finds the template's closing tokens after an assistant turn and checks that
    rendering BASE + new messages extends the rendering of BASE; a template that fails it (e.g. one that rewrites
    the last assistant turn) gets full renders instead, checked by TokenBook as before.
    """

    def __init__(self, render: Render, encode: Callable[[str], list[int] | Awaitable[list[int]]]):
        self._render, self._encode = render, encode
        self._probed: dict[str, tuple[list[int], list[int]] | None] = {}  # tools key -> (BASE ids, closing)

    async def _call(self, fn: Callable[..., Any], *args: Any) -> list[int]:
        out = fn(*args)
        return list(await out) if inspect.isawaitable(out) else list(out)

    async def probe(self, tools: list[dict[str, Any]] | None) -> tuple[list[int], list[int]] | None:
        """(ids of BASE, closing tokens after an assistant turn), or None when the template is not incremental."""
        key = repr(tools)
        if key not in self._probed:
            head = await self._call(self._render, _BASE[:2], True, tools)
            full = await self._call(self._render, _BASE, False, tools)
            body = await self._call(self._encode, _BASE[2]["content"])
            probe = [{"role": "user", "content": "v"}]
            extended = await self._call(self._render, _BASE + probe, True, tools)
            ok = full[: len(head)] == head and full[len(head) : len(head) + len(body)] == body
            ok = ok and extended[: len(full)] == full and len(extended) > len(full)
            self._probed[key] = (full, full[len(head) + len(body) :]) if ok else None
        return self._probed[key]

    async def build(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, state: TokenState | None
    ) -> TurnPrompt:
        """The prompt for the next turn of `messages`; registers it in `state` (commit the sampled ids after)."""
        probed = await self.probe(tools) if state is not None else None
        incremental = (
            state is not None
            and probed is not None
            and state.ids
            and 0 < state.n_messages < len(messages)
            and messages[state.n_messages - 1].get("role") == "assistant"
        )
        if not incremental:
            ids = await self._call(self._render, messages, True, tools)
            if state is not None:
                state.pending = (list(ids), len(messages))
            return TurnPrompt(ids, None)
        assert state is not None
        assert probed is not None
        base, closing = probed
        rendered = await self._call(self._render, _BASE + messages[state.n_messages :], True, tools)
        if rendered[: len(base)] != base:  # the template treated these messages unlike the probe: render it all
            ids = await self._call(self._render, messages, True, tools)
            state.pending = (list(ids), len(messages))
            return TurnPrompt(ids, None)
        glue = closing_needed(state.ids, closing)
        delta = glue + rendered[len(base) :]
        ids = state.ids
        ids.extend(delta)
        state.pending = (ids, len(messages))
        return TurnPrompt(ids, delta, len(glue))


def closing_needed(sampled: list[int], closing: list[int]) -> list[int]:
    """The part of `closing` the conversation lacks: all of it after a cut turn, the rest after the model's own
    end-of-turn token(s).

    >>> closing_needed([5, 6, 7], [7, 10]), closing_needed([5, 6], [7, 10]), closing_needed([7, 10], [7, 10])
    ([10], [7, 10], [])
    """
    for j in range(min(len(closing), len(sampled)), 0, -1):
        if sampled[-j:] == closing[:j]:
            return closing[j:]
    return list(closing)


@dataclass(slots=True)
class TokenBook:
    """Per-episode state: the server's previous prompt followed by the tokens it sampled."""

    prev: list[int] | None = None
    turns: int = 0

    def turn_fields(
        self, prompt_ids: list[int] | None, token_ids: list[int] | None, delta: list[int] | None = None
    ) -> dict[str, Any]:
        """`prompt_token_ids`, `delta_token_ids` and `prefix_ok` for a new turn, updating the book.

        >>> b = TokenBook(); b.turn_fields([1, 2], [3])["prefix_ok"], b.turn_fields([1, 2, 3, 4], [5])
        (True, {'prompt_token_ids': None, 'delta_token_ids': [4], 'prefix_ok': True})
        """
        first, prev = self.turns == 0, self.prev
        self.turns += 1
        if delta is not None and token_ids is not None and not first:
            # Built token-in/token-out: prefix-preserving by construction, nothing to compare (O(new tokens)).
            self.prev = None
            return {"prompt_token_ids": None, "delta_token_ids": list(delta), "prefix_ok": True}
        if prompt_ids is None or token_ids is None:
            # A backend without token ids (gold, replay, a plain OpenAI server): nothing can be rebuilt.
            self.prev = None
            return {"prompt_token_ids": prompt_ids, "delta_token_ids": None, "prefix_ok": False}
        self.prev = list(prompt_ids[: len(prompt_ids)]) + list(token_ids)
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
