"""Token-in/token-out turn prompts (DESIGN §12): built from the previous prompt, the sampled ids, the closing
tokens the model did not emit, and the new messages alone; the `hf` backend through the real agent loop."""

from __future__ import annotations

import asyncio

from swerl_cli.agent.loop import AgentSettings, run_episode
from swerl_cli.agent.prompts import load_prompts
from swerl_cli.core.model_dir import load_tokenizer
from swerl_cli.policy.base import EpisodeInfo, Sampling
from swerl_cli.policy.hf import HFPolicy
from swerl_cli.policy.tokens import TokenState, rebuild_sequence
from swerl_cli.policy.turns import local_prompter, render_ids
from tests.agent.fakes import MemorySandbox

MESSAGES = [
    {"role": "system", "content": "You fix bugs."},
    {"role": "user", "content": "parse() drops the last field."},
]


def test_a_cut_turn_gets_the_closing_tokens_and_only_new_messages_are_rendered(tiny_model):
    tok = load_tokenizer(str(tiny_model))
    prompter, state = local_prompter(tok), TokenState()
    im_end, newline = tok.convert_tokens_to_ids("<|im_end|>"), tok.encode("\n", add_special_tokens=False)
    first = asyncio.run(prompter.build(MESSAGES, None, state))
    assert first.delta is None
    assert first.ids == render_ids(tok, MESSAGES, add_generation_prompt=True)
    cut = tok.encode("Let me lo", add_special_tokens=False)  # stopped by max_new_tokens mid-word
    state.commit(cut)
    history = [*MESSAGES, {"role": "assistant", "content": "Let me lo"}, {"role": "user", "content": "ls: ok"}]
    second = asyncio.run(prompter.build(history, None, state))
    second_ids = list(second.ids)  # `ids` is the episode's live list: valid until the next commit
    assert second.n_closing == 2
    assert second.delta[:2] == [im_end, *newline]
    assert second.ids == first.ids + cut + second.delta
    # The new message's rendering is exactly what the template renders after an assistant turn.
    assert (
        second.ids[len(first.ids) + len(cut) + 2 :]
        == render_ids(tok, history, add_generation_prompt=True)[-len(second.delta) + 2 :]
    )
    # A turn that ended with the model's own <|im_end|> needs only the newline; the prompt equals a full render.
    reply = tok.encode("Done.", add_special_tokens=False) + [im_end]
    state.commit(reply)
    history += [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "ok"}]
    third = asyncio.run(prompter.build(history, None, state))
    assert third.n_closing == 1
    assert third.ids[: len(second_ids) + len(reply)] == second_ids + reply
    assert third.ids == render_ids(tok, history, add_generation_prompt=True)[: len(third.ids)]


def test_hf_episode_turns_are_prefix_preserving_even_when_cut(tiny_model):
    policy = HFPolicy(str(tiny_model))
    prompts, settings = load_prompts(), AgentSettings(max_turns=4, max_format_errors=10)
    info = EpisodeInfo("x", 0, "r", {}, max_context_tokens=100_000)
    task = {"problem_statement": "Fix it.", "workdir": "/testbed"}
    result = asyncio.run(
        run_episode(task, policy, MemorySandbox(), Sampling(max_new_tokens=12, seed=1), prompts, settings, info)
    )
    turns = result.turns
    assert len(turns) == 4
    assert all(t["prefix_ok"] for t in turns)
    assert any(t["finish_reason"] == "length" for t in turns[:-1])
    assert all(t["prompt_token_ids"] is None and t["delta_token_ids"] for t in turns[1:])
    seq = rebuild_sequence(turns)
    assert len(seq) == turns[-1]["n_prompt_tokens"] + len(turns[-1]["token_ids"])
    # The sequence is exactly what the model was fed and sampled: turn 3's prompt, by construction of its delta.
    assert seq[: len(turns[0]["prompt_token_ids"])] == turns[0]["prompt_token_ids"]
