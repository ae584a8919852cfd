"""`swerl check-template`: check that a model's chat template keeps earlier turns' tokens unchanged across turns."""

from __future__ import annotations

from typing import Annotated

import typer

from swerl_cli.cli._common import boundary, err_console
from swerl_cli.core.errors import InputError


def register(app: typer.Typer) -> None:
    app.command(
        "check-template",
        help="Check that a model's chat template keeps earlier turns' tokens unchanged across turns "
        "(exit 0), or show the first differing position (exit 1).",
    )(_check_template)


@boundary("check-template")
def _check_template(
    model: Annotated[str, typer.Argument(help="Checkpoint directory (or cached hub id) whose tokenizer to check.")],
    conversation: Annotated[
        str | None, typer.Option(help="JSON file with a chat (list of messages) to use instead of the built-in one.")
    ] = None,
) -> None:
    import json

    from swerl_cli.core.model_dir import check_model_dir, load_tokenizer
    from swerl_cli.policy.tokens import SAMPLE_CONVERSATION, check_prefix_preserving
    from swerl_cli.policy.turns import render_ids
    from swerl_cli.streams.jsonl import dumps

    messages = SAMPLE_CONVERSATION
    if conversation:
        try:
            messages = json.loads(open(conversation, encoding="utf-8").read())
        except (OSError, ValueError) as e:
            raise InputError(conversation, None, None, f"cannot read a JSON list of messages: {e}") from None
        _check_messages(conversation, messages)
    check_model_dir(model)  # an unusable directory is exit 3 as for every --model, not the exit 1 of a bad template
    tok = load_tokenizer(model)
    eos = tok.eos_token_id
    report = check_prefix_preserving(
        lambda msgs, gen: render_ids(tok, msgs, add_generation_prompt=gen),
        lambda text: tok.encode(text, add_special_tokens=False) + ([eos] if eos is not None else []),
        messages,
    )
    out = {
        "model": model,
        "prefix_preserving": report.ok,
        "turns_checked": report.turns_checked,
        "turn": report.turn,
        "position": report.position,
        "expected": report.expected,
        "got": report.got,
    }
    typer.echo(dumps(out).decode(), nl=False)
    if report.ok:
        err_console.print(f"check-template: {model}: prefix-preserving over {report.turns_checked} turns")
        return
    err_console.print(
        f"check-template: {model}: NOT prefix-preserving: before assistant turn {report.turn}, token position "
        f"{report.position} is {tok.decode(report.got or [])!r}, expected {tok.decode(report.expected or [])!r} "
        "(the template rewrites earlier turns; training must re-render or the records keep full prompts)"
    )
    raise typer.Exit(1)


def _check_messages(source: str, messages: object) -> None:
    """A conversation is a JSON list of {"role": str, "content": str} objects; else one InputError naming the
    file and the field (`[2].content`), exit 3."""
    if not isinstance(messages, list) or not messages:
        got = "an empty list" if messages == [] else f"a JSON {_kind(messages)}"
        raise InputError(source, None, None, f"expected a JSON list of messages, got {got}")
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise InputError(source, None, f"[{i}]", f"expected a message object, got a JSON {_kind(m)}")
        for key in ("role", "content"):
            if key == "content" and m.get("content") is None and m.get("tool_calls"):
                continue  # an assistant turn that only calls tools
            if not isinstance(m.get(key), str):
                got = "missing" if key not in m else f"expected a string, got a JSON {_kind(m[key])}"
                raise InputError(source, None, f"[{i}].{key}", got)


def _kind(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")
