"""Trajectory records -> token sequences with exact loss masks (`load_samples`, `trajectory_to_sample`).

Layout (docs/records.md, `turns`), one sequence per trajectory:

    input_ids = turns[0].prompt_token_ids ++ turns[0].token_ids ++ turns[1].delta_token_ids ++ turns[1].token_ids ++ ...
    loss_mask = 1 exactly on token_ids positions (0 on turns flagged format_error when `mask_format_errors`, and
                always 0 on turns flagged `masked`: a demonstration's deliberate mistake)
    logprobs  = the sampler's logprobs on token_ids positions, 0.0 elsewhere (DAPO's old-policy logprobs)

Recorded token ids are used when every turn has them (no re-tokenisation drift). Otherwise (gold, replay, imported
trajectories) `messages` are rendered with the model's chat template (`data_render.py`). `Sample` and `DataStats` are
in `data_sample.py`; packing samples into micro-batches is `batching.py`'s. Plain Python, no torch: cheap to test.
"""

from __future__ import annotations

from typing import Any

from swerl_cli.core.errors import InputError
from swerl_cli.streams.records import GRADED, TRAJECTORY, Located, check_schema
from swerl_cli.training.data_render import sample_from_messages
from swerl_cli.training.data_sample import DataStats, Sample, untrained

# Sample and DataStats are imported from here by the trainers (rft, dapo, batching, probe).
__all__ = ["TOO_LONG_POLICIES", "DataStats", "Sample", "UnrebuildableError", "load_samples", "trajectory_to_sample"]

TOO_LONG_POLICIES = ("error", "truncate", "drop")


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
        trainable = 0 if untrained(turn, mask_format_errors, stats) else 1
        ids += glue
        mask += [0] * len(glue)
        lps += [0.0] * len(glue)
        ids += toks
        mask += [trainable] * len(toks)
        lps += [float(x) for x in lp]
    rec = loc.obj
    return Sample(str(rec.get("id", f"{loc.source}:{loc.line}")), loc.source, loc.line, ids, mask, lps, has_lp, rec)


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
