"""`swerl check-template` and the local `hf` policy on the tiny model."""

from __future__ import annotations

import json
import shutil

import pytest

from swerl_cli.agent.loop import AgentSettings, initial_messages
from swerl_cli.agent.prompts import load_prompts
from swerl_cli.policy.base import EpisodeInfo, Sampling
from swerl_cli.policy.hf import HFPolicy
from swerl_cli.policy.turns import render_ids
from tests.conftest import run_swerl

# A Qwen3-style template: reasoning (<think>...</think>) is dropped from assistant turns before the last one.
STRIPPING = (
    "{%- for message in messages -%}"
    "{%- set content = message['content'] or '' -%}"
    "{%- if message['role'] == 'assistant' and not loop.last -%}{%- set content = content.split('</think>')[-1] -%}"
    "{%- endif -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


def test_check_template_accepts_the_prefix_preserving_tiny_template(tiny_model):
    res = run_swerl("check-template", str(tiny_model))
    assert res.returncode == 0, res.stderr.decode()
    assert json.loads(res.stdout)["prefix_preserving"] is True


def test_check_template_fails_on_a_template_that_rewrites_history(tiny_model, tmp_path):
    model = tmp_path / "stripping"
    shutil.copytree(tiny_model, model)
    (model / "chat_template.jinja").write_text(STRIPPING)
    res = run_swerl("check-template", str(model))
    assert res.returncode == 1
    report = json.loads(res.stdout)
    assert report["prefix_preserving"] is False
    assert report["turn"] == 1
    assert report["position"] > 0
    assert "NOT prefix-preserving" in res.stderr.decode()


def test_check_template_on_an_unusable_model_is_exit_3_not_the_exit_1_of_a_bad_template(tiny_model, tmp_path):
    """A corrupt tokenizer.json exited 1, the code that says 'NOT prefix-preserving'; every other --model check
    (collect, rft, dapo) refuses it with exit 3 (core/model_dir.py)."""
    model = tmp_path / "broken"
    shutil.copytree(tiny_model, model)
    (model / "tokenizer.json").write_text('{"version": "1.0", "trunc')
    res = run_swerl("check-template", str(model))
    assert (res.returncode, res.stdout) == (3, b"")
    (line,) = res.stderr.decode().splitlines()
    assert line.startswith(f"swerl check-template: --model {model}: not a usable model directory: tokenizer.json ")


def test_hf_policy_returns_exact_prompt_ids_sampled_ids_and_logprobs(tiny_model):
    import asyncio

    policy = HFPolicy(str(tiny_model))
    messages = initial_messages(
        {"problem_statement": "Fix it.", "workdir": "/testbed"}, load_prompts(), AgentSettings()
    )
    info = EpisodeInfo("x", 0, "r", {}, max_context_tokens=100_000)
    c1 = asyncio.run(policy.acomplete(messages, Sampling(max_new_tokens=16, seed=3), episode=info))
    c2 = asyncio.run(policy.acomplete(messages, Sampling(max_new_tokens=16, seed=3), episode=info))
    assert c1.prompt_token_ids == render_ids(policy._tok, messages, add_generation_prompt=True)
    assert 1 <= len(c1.token_ids) <= 16
    assert len(c1.logprobs) == len(c1.token_ids)
    assert all(lp <= 0.0 for lp in c1.logprobs)
    assert c1.token_ids == c2.token_ids  # the seed is honoured
    assert c1.finish_reason == ("stop" if c1.token_ids[-1] == policy._tok.eos_token_id else "length")
    small = EpisodeInfo("x", 0, "r", {}, max_context_tokens=len(c1.prompt_token_ids))
    from swerl_cli.policy.base import ContextLimitError

    with pytest.raises(ContextLimitError):
        asyncio.run(policy.acomplete(messages, Sampling(max_new_tokens=16), episode=small))
