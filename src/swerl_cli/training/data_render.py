"""A trajectory without recorded token ids (gold, replay, imported) -> `Sample`, by rendering its `messages` with the
model's chat template: `return_assistant_tokens_mask` needs {% generation %} markers, and the masked spans are
checked against the assistant messages before use."""

from __future__ import annotations

import re
from typing import Any

from swerl_cli.core.errors import InputError
from swerl_cli.streams.records import Located, require
from swerl_cli.training.data_sample import DataStats, Sample, untrained

_GENERATION_TAG = re.compile(r"{%-?\s*generation\s*-?%}")


def check_generation_template(tokenizer: Any, where: str) -> None:
    """Re-rendering needs {% generation %} markers in the chat template; say so in one line if absent."""
    template = getattr(tokenizer, "chat_template", None)
    if not isinstance(template, str) or not _GENERATION_TAG.search(template):
        raise InputError(
            where,
            None,
            None,
            "record has no token ids and the model's chat template has no {% generation %} markers, so assistant "
            "tokens cannot be masked; use a template with generation markers (swerl check-template) "
            "or record token ids",
        )


def sample_from_messages(loc: Located, tokenizer: Any, mask_format_errors: bool, stats: DataStats) -> Sample:
    """Render `messages` with the chat template and keep the assistant spans (checked against the messages)."""
    check_generation_template(tokenizer, f"{loc.source}:{loc.line}")
    messages = require(loc, "messages", list)
    if not messages:
        raise loc.error("messages", "empty: there is no conversation to render")
    from jinja2 import TemplateError  # transformers renders chat templates with jinja2

    try:
        out = tokenizer.apply_chat_template(
            messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True, add_generation_prompt=False
        )
    except (ValueError, TypeError, KeyError, TemplateError) as e:  # the template rejects the conversation
        raise loc.error("messages", f"the chat template cannot render them: {str(e).splitlines()[0]}") from None
    ids = list(out["input_ids"])
    amask = list(out["assistant_masks"])
    spans = _runs(amask)
    assistant_idx = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"]
    if len(spans) != len(assistant_idx):
        raise loc.error("messages", f"chat template marked {len(spans)} assistant spans for {len(assistant_idx)} turns")
    turns = loc.obj.get("turns")
    flagged = {
        t.get("message_index")
        for t in (turns if isinstance(turns, list) else [])
        if isinstance(t, dict) and untrained(t, mask_format_errors, stats)
    }
    mask = [0] * len(ids)
    for (start, end), mi in zip(spans, assistant_idx, strict=True):
        content = messages[mi].get("content")
        if isinstance(content, str) and content.strip() and content.strip() not in tokenizer.decode(ids[start:end]):
            raise loc.error(f"messages[{mi}]", "assistant span rendered by the chat template does not match content")
        if mi in flagged:
            continue
        mask[start:end] = [1] * (end - start)
    stats.rerendered += 1
    rec = loc.obj
    return Sample(
        str(rec.get("id", f"{loc.source}:{loc.line}")), loc.source, loc.line, ids, mask, [0.0] * len(ids), False, rec
    )


def _runs(mask: list[int]) -> list[tuple[int, int]]:
    """Contiguous runs of 1s: `_runs([0,1,1,0,1]) == [(1, 3), (4, 5)]`."""
    spans, start = [], None
    for i, m in enumerate([*mask, 0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            spans.append((start, i))
            start = None
    return spans
