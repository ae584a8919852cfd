"""Trajectory records -> token sequences with exact loss masks, and packing into token-budget micro-batches.

Layout (docs/records.md, `turns`), one sequence per trajectory:

    input_ids = turns[0].prompt_token_ids ++ turns[0].token_ids ++ turns[1].delta_token_ids ++ turns[1].token_ids ++ ...
    loss_mask = 1 exactly on token_ids positions (0 on turns flagged format_error when `mask_format_errors`, and
                always 0 on turns flagged `masked`: a demonstration's deliberate mistake)
    logprobs  = the sampler's logprobs on token_ids positions, 0.0 elsewhere (DAPO's old-policy logprobs)

Recorded token ids are used when every turn has them (no re-tokenisation drift). Otherwise (gold, replay, imported
trajectories) `messages` are rendered with the model's chat template and `return_assistant_tokens_mask`, which needs
{% generation %} markers; the masked spans are checked against the assistant messages before use.
Torch is imported only by `collate`; everything else is plain Python so it is cheap to test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from swerl_cli.core.errors import InputError
from swerl_cli.streams.records import GRADED, TRAJECTORY, Located, check_schema, require

TOO_LONG_POLICIES = ("error", "truncate", "drop")
_GENERATION_TAG = re.compile(r"{%-?\s*generation\s*-?%}")


@dataclass(slots=True)
class Sample:
    """One trajectory as a training sequence. `record` is the source object (rewards, groups, stats for DAPO)."""

    id: str
    source: str
    line: int
    input_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    has_logprobs: bool
    record: dict[str, Any] = field(repr=False, default_factory=dict)
    truncated: int = 0
    advantage: float = 0.0  # DAPO: the group advantage broadcast to every action token (0.0 in RFT)
    infer_logprobs: list[float] = field(default_factory=list)  # DAPO corrections: the sampler's, kept apart

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def n_trainable(self) -> int:
        """Number of tokens with loss mask 1."""
        return sum(self.loss_mask)


@dataclass(slots=True)
class DataStats:
    """Counts reported in the run summary: what was read, skipped, truncated or dropped."""

    records: int = 0
    samples: int = 0
    skipped: int = 0
    truncated: int = 0
    dropped_too_long: int = 0
    rerendered: int = 0
    skipped_unrebuildable: int = 0
    tokens: int = 0
    trainable_tokens: int = 0
    format_error_turns_masked: int = 0
    masked_turns: int = 0  # turns flagged `masked` (a demonstration's deliberate mistake), never trained on
    skip_reasons: dict[str, int] = field(default_factory=dict)
    # The trained samples per the records' `run` name (where the data came from: e.g. `bootstrap-gold-demos`).
    runs: dict[str, int] = field(default_factory=dict)


class UnrebuildableError(InputError):
    """A turn with `prefix_ok: false`: the token sequence cannot be rebuilt without re-rendering."""


UNREBUILDABLE_HINT = (
    "false: the sequence cannot be rebuilt from token ids; pass --rerender (re-render the messages with the chat "
    "template) or --skip-unrebuildable (drop such trajectories and count them)"
)


def _int_list(loc: Located, path: str, value: Any) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise loc.error(path, "expected array of token ids (ints)")
    return value


def has_token_ids(turns: list[Any]) -> bool:
    """True when the record carries a token-level history (turn 0 prompt ids + every turn's sampled ids).

    Backends without token ids (gold, replay, imported data) leave `prompt_token_ids` null: those are re-rendered.
    """
    if not turns or not isinstance(turns[0], dict) or not isinstance(turns[0].get("prompt_token_ids"), list):
        return False
    return all(isinstance(t, dict) and isinstance(t.get("token_ids"), list) for t in turns)


def sample_from_tokens(loc: Located, turns: list[dict[str, Any]], mask_format_errors: bool, stats: DataStats) -> Sample:
    """Build a sample from recorded token ids; prefix_ok=false on a later turn is an error (re-render instead)."""
    ids: list[int] = []
    mask: list[int] = []
    lps: list[float] = []
    has_lp = True
    for k, turn in enumerate(turns):
        where = f"turns[{k}]"
        if k == 0:
            glue = _int_list(loc, f"{where}.prompt_token_ids", turn.get("prompt_token_ids"))
        else:
            if turn.get("prefix_ok") is False:
                raise UnrebuildableError(loc.source, loc.line, f"{where}.prefix_ok", UNREBUILDABLE_HINT)
            glue = _int_list(loc, f"{where}.delta_token_ids", turn.get("delta_token_ids"))
        toks = _int_list(loc, f"{where}.token_ids", turn.get("token_ids"))
        lp = turn.get("logprobs")
        if lp is None:
            has_lp = False
            lp = [0.0] * len(toks)
        elif not isinstance(lp, list) or len(lp) != len(toks):
            n = len(lp) if isinstance(lp, list) else "not an array"
            raise loc.error(f"{where}.logprobs", f"length {n} != token_ids length {len(toks)}")
        trainable = 0 if _untrained(turn, mask_format_errors, stats) else 1
        ids += glue
        mask += [0] * len(glue)
        lps += [0.0] * len(glue)
        ids += toks
        mask += [trainable] * len(toks)
        lps += [float(x) for x in lp]
    rec = loc.obj
    return Sample(str(rec.get("id", f"{loc.source}:{loc.line}")), loc.source, loc.line, ids, mask, lps, has_lp, rec)


def _untrained(turn: dict[str, Any], mask_format_errors: bool, stats: DataStats) -> bool:
    """True when `turn` gets loss mask 0: flagged `masked`, or a format error under `mask_format_errors` (counted)."""
    if turn.get("masked") is True:
        stats.masked_turns += 1
        return True
    if turn.get("format_error") is True and mask_format_errors:
        stats.format_error_turns_masked += 1
        return True
    return False


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
        if isinstance(t, dict) and _untrained(t, mask_format_errors, stats)
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


def trajectory_to_sample(
    loc: Located,
    tokenizer: Any = None,
    *,
    mask_format_errors: bool = True,
    rerender: bool = False,
    stats: DataStats | None = None,
) -> Sample:
    """One trajectory (or graded) record -> Sample; raises a one-line InputError on anything unusable."""
    stats = stats if stats is not None else DataStats()
    check_schema(loc, TRAJECTORY, GRADED)
    turns = loc.obj.get("turns")
    if turns is not None and not isinstance(turns, list):
        raise loc.error("turns", "expected array")
    prefix_broken = any(isinstance(t, dict) and t.get("prefix_ok") is False for t in (turns or [])[1:])
    if turns and has_token_ids(turns) and not (prefix_broken and rerender):
        sample = sample_from_tokens(loc, turns, mask_format_errors, stats)
    else:
        if tokenizer is None:
            raise loc.error("turns", "no token ids recorded and no tokenizer given to render messages")
        sample = sample_from_messages(loc, tokenizer, mask_format_errors, stats)
    if sample.input_ids:
        sample.loss_mask[0] = 0  # the first token has no prefix to predict it from
    if sample.n_trainable == 0:
        raise loc.error("turns", "no trainable token (every assistant turn is masked or empty)")
    return sample


def fit_length(sample: Sample, max_seq_len: int, policy: str) -> Sample | None:
    """Apply --too-long: 'error' raises, 'truncate' cuts the tail (dropping its mask), 'drop' returns None."""
    n = len(sample)
    if n <= max_seq_len:
        return sample
    if policy == "drop":
        return None
    if policy == "truncate":
        sample.input_ids = sample.input_ids[:max_seq_len]
        sample.loss_mask = sample.loss_mask[:max_seq_len]
        sample.logprobs = sample.logprobs[:max_seq_len]
        sample.truncated = n - max_seq_len
        return sample
    raise InputError(
        sample.source,
        sample.line,
        None,
        f"sequence of {n} tokens exceeds --max-seq-len {max_seq_len}; raise it or pass --too-long truncate|drop",
    )


def load_samples(
    records: Any,
    tokenizer: Any,
    *,
    max_seq_len: int,
    too_long: str = "error",
    skip_invalid: bool = False,
    mask_format_errors: bool = True,
    rerender: bool = False,
    skip_unrebuildable: bool = False,
) -> tuple[list[Sample], DataStats]:
    """Turn an iterable of Located records into samples, applying length policy and counted skips."""
    stats = DataStats()
    samples: list[Sample] = []
    for loc in records:
        stats.records += 1
        try:
            sample = trajectory_to_sample(
                loc, tokenizer, mask_format_errors=mask_format_errors, rerender=rerender, stats=stats
            )
        except UnrebuildableError:
            if not skip_unrebuildable and not skip_invalid:
                raise
            stats.skipped_unrebuildable += 1
            continue
        except InputError as e:
            if not skip_invalid or e.field == "schema":
                raise
            stats.skipped += 1
            reason = e.message.split(":")[0][:60]
            stats.skip_reasons[reason] = stats.skip_reasons.get(reason, 0) + 1
            continue
        fitted = fit_length(sample, max_seq_len, too_long)
        if fitted is None:
            stats.dropped_too_long += 1
            continue
        if fitted.n_trainable == 0:  # truncation removed every trainable token
            stats.dropped_too_long += 1
            continue
        stats.truncated += 1 if fitted.truncated else 0
        stats.samples += 1
        run = loc.obj.get("run") if isinstance(loc.obj, dict) else None
        run = run if isinstance(run, str) else "(none)"
        stats.runs[run] = stats.runs.get(run, 0) + 1
        stats.tokens += len(fitted)
        stats.trainable_tokens += fitted.n_trainable
        samples.append(fitted)
    return samples, stats
