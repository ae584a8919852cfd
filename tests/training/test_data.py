"""Trajectory -> tokens + loss mask: exact assistant spans, format-error masking, length policy, bad-input errors."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from swerl_cli.core.errors import InputError
from swerl_cli.streams.jsonl import read_records
from swerl_cli.streams.records import Located
from swerl_cli.training.batching import collate, pack, plan_steps
from swerl_cli.training.data import load_samples, trajectory_to_sample
from tests.training.fixtures import make_trajectory, write_jsonl

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def tok(tiny_model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def _loc(rec: dict, line: int = 7) -> Located:
    return Located("runs.jsonl", line, rec)


def test_token_layout_masks_exactly_sampled_tokens(tok) -> None:
    rec = make_trajectory(tok, 1, n_turns=3)
    s = trajectory_to_sample(_loc(rec), tok)
    t = rec["turns"]
    expected = t[0]["prompt_token_ids"] + t[0]["token_ids"] + t[1]["delta_token_ids"] + t[1]["token_ids"]
    expected += t[2]["delta_token_ids"] + t[2]["token_ids"]
    assert s.input_ids == expected
    masked = [i for i, m in zip(s.input_ids, s.loss_mask, strict=True) if m]
    assert masked == t[0]["token_ids"] + t[1]["token_ids"] + t[2]["token_ids"]
    lps = [lp for lp, m in zip(s.logprobs, s.loss_mask, strict=True) if m]
    assert lps == pytest.approx(t[0]["logprobs"] + t[1]["logprobs"] + t[2]["logprobs"])
    assert all(lp == 0.0 for lp, m in zip(s.logprobs, s.loss_mask, strict=True) if not m)
    assert tok.decode(masked).count("<|im_end|>") == 3


def test_format_error_turn_is_masked(tok) -> None:
    rec = make_trajectory(tok, 2, n_turns=3, format_error_turns=(1,))
    s = trajectory_to_sample(_loc(rec), tok)
    masked = [i for i, m in zip(s.input_ids, s.loss_mask, strict=True) if m]
    assert masked == rec["turns"][0]["token_ids"] + rec["turns"][2]["token_ids"]
    kept = trajectory_to_sample(_loc(rec), tok, mask_format_errors=False)
    assert kept.n_trainable == s.n_trainable + len(rec["turns"][1]["token_ids"])


def test_masked_turn_is_never_trained_on_from_tokens_or_rerendered(tok) -> None:
    """A demonstration's deliberate mistake (turn flag `masked`) gets loss mask 0 whatever `mask_format_errors`
    says, in the token path and when the messages are re-rendered; the summary counts it apart."""
    from swerl_cli.training.data import DataStats

    rec = make_trajectory(tok, 5, n_turns=3)
    rec["turns"][1]["masked"] = True
    want = rec["turns"][0]["token_ids"] + rec["turns"][2]["token_ids"]
    bare = copy.deepcopy(rec)
    for turn in bare["turns"]:
        turn["token_ids"] = turn["prompt_token_ids"] = turn["delta_token_ids"] = turn["logprobs"] = None
    for record in (rec, bare):
        stats = DataStats()
        s = trajectory_to_sample(_loc(record), tok, mask_format_errors=False, stats=stats)
        trained = [i for i, m in zip(s.input_ids, s.loss_mask, strict=True) if m]
        assert trained == want
        assert (stats.masked_turns, stats.format_error_turns_masked) == (1, 0)


def test_rerender_without_token_ids_matches_recorded_tokens(tok) -> None:
    rec = make_trajectory(tok, 3, n_turns=3, format_error_turns=(2,))
    bare = copy.deepcopy(rec)
    for turn in bare["turns"]:
        turn["token_ids"] = turn["prompt_token_ids"] = turn["delta_token_ids"] = turn["logprobs"] = None
    a = trajectory_to_sample(_loc(rec), tok)
    b = trajectory_to_sample(_loc(bare), tok)
    # The template renders a trailing "\n" after the last <|im_end|>; the sampled sequence stops at <|im_end|>.
    assert b.input_ids[: len(a)] == a.input_ids
    assert b.loss_mask[: len(a)] == a.loss_mask
    assert sum(b.loss_mask[len(a) :]) == 0
    assert not b.has_logprobs
    assert a.has_logprobs


def test_rerender_needs_generation_markers(tok) -> None:
    plain = copy.deepcopy(tok)
    plain.chat_template = tok.chat_template.replace("{%- generation -%}", "").replace("{%- endgeneration -%}", "")
    rec = make_trajectory(tok, 4)
    rec["turns"] = None
    with pytest.raises(InputError, match=r"runs\.jsonl:7: .*generation"):
        trajectory_to_sample(_loc(rec), plain)


def test_rerender_with_a_broken_template_is_one_located_line(tok) -> None:
    broken = copy.deepcopy(tok)
    # Generation markers present, but the template refuses every conversation (jinja2's TemplateError).
    broken.chat_template = "{%- generation -%}{%- endgeneration -%}{{ raise_exception('no tools role here') }}"
    rec = make_trajectory(tok, 4)
    rec["turns"] = None
    with pytest.raises(InputError, match=r"runs\.jsonl:7: field 'messages': the chat template cannot render") as info:
        trajectory_to_sample(_loc(rec), broken)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (lambda r: r["turns"][1].update(logprobs=[0.0]), r"runs\.jsonl:7: field 'turns\[1\]\.logprobs': length 1 !="),
        (lambda r: r.update(schema="swerl.trajectory/9"), r"runs\.jsonl:7: field 'schema': unsupported version 9"),
        (lambda r: [t.update(format_error=True) for t in r["turns"]], r"runs\.jsonl:7: .*no trainable token"),
        (lambda r: r["turns"][1].update(prefix_ok=False), r"field 'turns\[1\]\.prefix_ok'.*--rerender"),
        (lambda r: r["turns"][0].update(token_ids=["a"]), r"field 'turns\[0\]\.token_ids': expected array of token"),
    ],
)
def test_bad_input_is_one_located_line(tok, mutate, pattern) -> None:
    rec = make_trajectory(tok, 5)
    mutate(rec)
    with pytest.raises(InputError, match=pattern) as info:
        trajectory_to_sample(_loc(rec), tok)
    assert "\n" not in str(info.value)


def test_skip_invalid_counts_and_length_policies(tok, tmp_path: Path) -> None:
    good = [make_trajectory(tok, i, n_turns=2) for i in range(4)]
    bad = make_trajectory(tok, 9)
    bad["turns"][0]["logprobs"] = [0.0]
    path = write_jsonl(tmp_path / "t.jsonl", [*good, bad])
    with pytest.raises(InputError, match=r"t\.jsonl:5: field 'turns\[0\]\.logprobs'"):
        load_samples(read_records(str(path)), tok, max_seq_len=4096)
    samples, stats = load_samples(read_records(str(path)), tok, max_seq_len=4096, skip_invalid=True)
    assert (len(samples), stats.skipped) == (4, 1)
    limit = min(len(s) for s in samples) - 5
    with pytest.raises(InputError, match=r"exceeds --max-seq-len"):
        load_samples(read_records(str(path)), tok, max_seq_len=limit, skip_invalid=True)
    cut, st = load_samples(read_records(str(path)), tok, max_seq_len=limit, too_long="truncate", skip_invalid=True)
    assert st.truncated == 4
    assert all(len(s) == limit for s in cut)
    assert all(s.loss_mask == full.loss_mask[:limit] for s, full in zip(cut, samples, strict=True))
    _, st = load_samples(read_records(str(path)), tok, max_seq_len=limit, too_long="drop", skip_invalid=True)
    assert (st.samples, st.dropped_too_long) == (0, 4)


def test_plan_balances_ranks_and_collate_resets_positions(tok) -> None:
    samples = [trajectory_to_sample(_loc(make_trajectory(tok, i, n_turns=1 + i % 4)), tok) for i in range(10)]
    plans = plan_steps(samples, world_size=2, micro_batch_tokens=400, batch_size=5, seed=1)
    assert [p.n_samples for p in plans] == [5, 5]
    for p in plans:
        seen = sorted(i for rank in p.micro for mb in rank for i in mb)
        assert len(seen) == 5
        assert len(set(seen)) == 5
        for rank in p.micro:
            assert all(sum(len(samples[i]) for i in mb) <= 400 or len(mb) == 1 for mb in rank)
    assert pack({0: 300, 1: 200, 2: 150, 3: 100}, 400) == [[0, 3], [1, 2]]
    batch = collate(samples[:2])
    n0 = len(samples[0])
    assert batch.position_ids[0, 0] == 0
    assert batch.position_ids[0, n0] == 0
    assert batch.position_ids[0, n0 - 1] == n0 - 1
    assert batch.loss_mask.sum().item() == samples[0].n_trainable + samples[1].n_trainable
