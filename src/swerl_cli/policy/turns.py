"""What every token-level policy backend does around one turn, whichever engine samples it (hf, vllm, openai).

`render_ids` applies a local tokenizer's chat template as an OpenAI server does, `local_prompter` builds turn
prompts token-in/token-out from it, `finish_turn` sets a completion's prompt fields and commits its sampled ids to
the episode's token state, and `parse_tool_calls` reads Hermes-style tool-call blocks from a reply's text. No
backend imports another: they all take these from here.
"""

from __future__ import annotations

import json
import re
from typing import Any

from swerl_cli.policy.base import Completion
from swerl_cli.policy.openai_wire import wire_message
from swerl_cli.policy.tokens import TokenState, TurnPrompt, TurnPrompter

_TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)


def render_ids(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    *,
    add_generation_prompt: bool,
    tools: list[dict[str, Any]] | None = None,
) -> list[int]:
    """Token ids of the chat template applied to `messages` (what an OpenAI server does before generating)."""
    kwargs: dict[str, Any] = {"tokenize": True, "add_generation_prompt": add_generation_prompt}
    if tools:
        kwargs["tools"] = tools
    out = tokenizer.apply_chat_template([wire_message(m) for m in messages], **kwargs)
    if isinstance(out, dict) or hasattr(out, "keys"):
        out = out["input_ids"]
    return [int(t) for t in out]


def local_prompter(tokenizer: Any) -> TurnPrompter:
    """Token-in/token-out turn prompts rendered with a local tokenizer's chat template."""
    return TurnPrompter(
        lambda messages, gen, tools: render_ids(tokenizer, messages, add_generation_prompt=gen, tools=tools),
        lambda text: tokenizer.encode(text, add_special_tokens=False),
    )


def prompt_fields(tp: TurnPrompt) -> dict[str, Any]:
    """The Completion fields of a turn prompt: the full prompt on turn 0 (or a full render), the delta after."""
    if tp.delta is None:
        return {"prompt_token_ids": list(tp.ids), "delta_token_ids": None, "n_closing": 0}
    return {"prompt_token_ids": None, "delta_token_ids": tp.delta, "n_closing": tp.n_closing}


def finish_turn(comp: Completion, tp: TurnPrompt, state: TokenState | None) -> Completion:
    """`comp` with its turn prompt's fields set (prompt_fields), its sampled ids committed to the episode's state."""
    for name, value in prompt_fields(tp).items():
        setattr(comp, name, value)
    if state is not None:
        state.commit(comp.token_ids or [])
    return comp


def parse_tool_calls(text: str) -> list[dict[str, Any]] | None:
    """Hermes-style `<tool_call>{"name":..., "arguments":{...}}</tool_call>` blocks as OpenAI tool calls."""
    calls = []
    for i, raw in enumerate(_TOOL_CALL.findall(text)):
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("name"), str):
            args = obj.get("arguments", {})
            calls.append(
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": obj["name"], "arguments": args if isinstance(args, str) else json.dumps(args)},
                }
            )
    return calls or None
