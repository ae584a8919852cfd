"""The `vllm` policy's adapter against a stand-in engine (tests/agent/fake_vllm.py); the real engine: tests/gpu/."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from swerl_cli.collect import CollectConfig, build_policy
from swerl_cli.core.model_dir import load_tokenizer
from swerl_cli.policy.base import ContextLimitError, EpisodeInfo, Sampling
from swerl_cli.policy.engine_size import KV_ENV, kv_bytes_per_token, kv_cache_gib, server_settings
from swerl_cli.policy.tokens import rebuild_sequence
from swerl_cli.policy.turns import render_ids
from swerl_cli.policy.vllm import VLLMPolicy
from tests.agent import fake_vllm
from tests.conftest import EXAMPLES

MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Fix the bug."}]


def episode(i: int, max_context: int | None = None) -> EpisodeInfo:
    return EpisodeInfo(f"task-{i}", 0, "run0", {}, max_context)


def run(coro_fn):
    return asyncio.run(coro_fn())


def test_concurrent_requests_reach_the_engine_together_with_explicit_sampling(tiny_model, monkeypatch):
    engine_cls = fake_vllm.install(monkeypatch)
    policy = VLLMPolicy(str(tiny_model), engine_kwargs={"tensor_parallel_size": 1, "dtype": "bfloat16"})
    sampling = Sampling(max_new_tokens=64, seed=7)

    async def main():
        try:
            return await asyncio.gather(*(policy.acomplete(MESSAGES, sampling, episode=episode(i)) for i in range(8)))
        finally:
            await policy.aclose()

    comps = run(main)
    (engine,) = engine_cls.instances
    assert engine.in_flight_max == 8  # continuously batched, not one request at a time
    assert engine.is_shut_down
    assert engine.args.model == str(tiny_model)
    assert engine.args.kwargs == {"tensor_parallel_size": 1, "dtype": "bfloat16"}
    prompt = render_ids(load_tokenizer(str(tiny_model)), MESSAGES, add_generation_prompt=True)
    ids_sent, params, _ = engine.requests[0]
    assert ids_sent == prompt
    assert len({rid for _, _, rid in engine.requests}) == 8
    assert (params.temperature, params.top_p, params.top_k, params.min_p, params.repetition_penalty) == (
        1.0,
        1.0,
        -1,
        0.0,
        1.0,
    )
    assert (params.max_tokens, params.seed, params.logprobs, params.output_kind.name) == (64, 7, 0, "FINAL_ONLY")
    for c in comps:
        assert c.prompt_token_ids == prompt
        assert c.text == "ok\n```command\nsubmit\n```"
        assert c.finish_reason == "stop"
        assert c.logprobs == pytest.approx([-0.01 * (i + 1) for i in range(len(c.token_ids))])


def test_context_budget_and_engine_length_limit_become_context_limit(tiny_model, monkeypatch):
    engine_cls = fake_vllm.install(monkeypatch)
    policy = VLLMPolicy(str(tiny_model))
    n_prompt = len(render_ids(load_tokenizer(str(tiny_model)), MESSAGES, add_generation_prompt=True))

    async def ask(max_context: int | None):
        return await policy.acomplete(MESSAGES, Sampling(max_new_tokens=4096), episode=episode(0, max_context))

    async def main():
        try:
            short = await ask(n_prompt + 5)  # the remaining budget caps max_tokens: a 'length' finish
            with pytest.raises(ContextLimitError, match="fills the context"):
                await ask(n_prompt)
            engine_cls.max_model_len = n_prompt - 1
            with pytest.raises(ContextLimitError, match="maximum model length"):
                await ask(None)
            return short
        finally:
            engine_cls.max_model_len = 4096
            await policy.aclose()

    short = run(main)
    assert (len(short.token_ids), short.finish_reason) == (5, "length")


def test_tools_format_parses_hermes_tool_calls(tiny_model, monkeypatch):
    engine_cls = fake_vllm.install(monkeypatch)
    monkeypatch.setattr(
        engine_cls, "script", ['Look.\n<tool_call>{"name": "execute", "arguments": {"command": "ls"}}</tool_call>']
    )
    tools = [{"type": "function", "function": {"name": "execute", "parameters": {"type": "object"}}}]
    policy = VLLMPolicy(str(tiny_model))

    async def main():
        try:
            return await policy.acomplete(MESSAGES, Sampling(), tools=tools, episode=episode(0))
        finally:
            await policy.aclose()

    comp = run(main)
    assert comp.finish_reason == "tool_calls"
    assert comp.tool_calls[0]["function"] == {"name": "execute", "arguments": json.dumps({"command": "ls"})}


@pytest.mark.docker
def test_collect_with_the_vllm_policy_records_token_exact_turns(tiny_model, monkeypatch, tmp_path):
    from swerl_cli.collect import CollectConfig, collect_records
    from swerl_cli.streams.jsonl import read_records

    engine_cls = fake_vllm.install(monkeypatch)
    monkeypatch.setattr(engine_cls, "script", ["Look.\n```command\nls\n```", "Done.\n```command\nsubmit\n```"])
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join((EXAMPLES / "tasks.jsonl").read_text().splitlines(keepends=True)[:2]))
    cfg = CollectConfig(
        policy="vllm",
        model=str(tiny_model),
        samples=2,
        concurrency=4,
        tensor_parallel_size=2,
        gpu_memory_utilization=0.5,
        vllm_engine_args={"enable_prefix_caching": True},
        run="vllm-fake",
    )
    monkeypatch.setenv(KV_ENV, "7")  # set by the user: left alone
    out: list[dict] = []
    collect_records(read_records(str(tasks)), cfg, out.append)
    (engine,) = engine_cls.instances
    kwargs = {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.5, "enable_prefix_caching": True}
    positions = json.loads((tiny_model / "config.json").read_text())["max_position_embeddings"]
    length = min(65536, positions)
    whole = {"enable_chunked_prefill": False, "max_num_batched_tokens": max(length, 4096)}  # CPU: whole prefills
    assert engine.args.kwargs == {**kwargs, "dtype": "float32", "max_model_len": length, **whole}
    assert os.environ[KV_ENV] == "7"
    assert "kv_cache_gib" not in out[0]["policy"]
    assert engine.in_flight_max >= 2
    assert len(out) == 4
    tok = load_tokenizer(str(tiny_model))
    for r in out:
        assert r["exit_status"] == "submitted", r["error"]
        assert r["policy"]["backend"] == "vllm"
        assert all(t["prefix_ok"] for t in r["turns"])
        fresh = render_ids(tok, r["messages"], add_generation_prompt=False)
        seq = rebuild_sequence(r["turns"])
        assert fresh[: len(seq)] == seq


SMOLLM2 = {"num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "hidden_size": 576,
           "head_dim": 64, "max_position_embeddings": 8192}  # fmt: skip


def test_engine_is_sized_from_the_run_in_the_trainers_dtype(tmp_path, monkeypatch):
    """Default flags: fp32 (the trainer's dtype on CPU), the checkpoint's context (not the 65536-token budget)
    and a KV cache of concurrency x context tokens, rounded up to GiB with headroom, set before the engine starts."""
    fake_vllm.install(monkeypatch)
    (tmp_path / "config.json").write_text(json.dumps(SMOLLM2))
    for name in ("pytorch_model.bin", "tokenizer_config.json"):  # a model directory as far as model_dir.py checks
        (tmp_path / name).write_text("{}")
    assert kv_bytes_per_token(SMOLLM2, "float32") == 30 * 3 * 64 * 2 * 4
    # 46,080 B x 8192 x 4 = 1.41 GiB, x 1.25 headroom -> 2 GiB; bf16 halves it; one sequence needs 1 GiB
    assert kv_cache_gib(str(tmp_path), 8192, 4, "float32") == 2
    assert kv_cache_gib(str(tmp_path), 8192, 4, "bfloat16") == 1
    assert kv_cache_gib(str(tmp_path), 8192, 16, "float32") == 8
    policy = build_policy(CollectConfig(policy="vllm", model=str(tmp_path), concurrency=4))
    assert isinstance(policy, VLLMPolicy)
    assert policy.engine_kwargs == {"tensor_parallel_size": 1, "gpu_memory_utilization": 0.9, "dtype": "float32",
                                    "max_model_len": 8192, "enable_chunked_prefill": False,
                                    "max_num_batched_tokens": 8192}  # fmt: skip
    monkeypatch.setenv(KV_ENV, "x")
    monkeypatch.delenv(KV_ENV)  # unset for the test, restored after it
    policy.size_kv_cache()
    assert os.environ[KV_ENV] == "2"
    assert policy.describe()["kv_cache_gib"] == 2
    asked = build_policy(CollectConfig(policy="vllm", model=str(tmp_path), dtype="bf16", max_context_tokens=4096))
    assert isinstance(asked, VLLMPolicy)
    assert (asked.engine_kwargs["dtype"], asked.engine_kwargs["max_model_len"]) == ("bfloat16", 4096)
    # The server script gets the same sizing: flags it lacks, and the GiB.
    whole = ["--no-enable-chunked-prefill", "--max-num-batched-tokens"]  # CPU: a split seeded prefill kills vLLM
    assert server_settings(str(tmp_path), 4, 65536, []) == (
        ["--dtype", "float32", "--max-model-len", "8192", *whole, "8192"], 2)  # fmt: skip
    assert server_settings(str(tmp_path), 2, 65536, ["--dtype=bfloat16", "--max-model-len", "4096"]) == (
        [*whole, "4096"], 1)  # fmt: skip
    assert server_settings(str(tmp_path), 2, 65536, ["--max-model-len", "2048", "--max-num-batched-tokens", "9000"])[
        0] == ["--dtype", "float32"]  # fmt: skip


def test_engine_output_goes_to_stderr_and_records_to_stdout():
    """Inside engine_output_to_stderr, descriptor 1 (inherited by child processes) is stderr, and only the record
    writer reaches the real stdout, for `-o -` and `-o /dev/stdout` alike."""
    code = """
import os, subprocess, sys
from swerl_cli.streams.outputs import open_output
from swerl_cli.streams.stdio import engine_output_to_stderr
with engine_output_to_stderr():
    subprocess.run(["sh", "-c", "echo child-noise"], check=True)
    os.write(1, b"fd1-noise\\n")
    print("print-noise", flush=True)
    with open_output(None, "append") as out:
        out.write({"id": "a"})
    with open_output("/dev/stdout", "append") as out:
        out.write({"id": "b"})
print("after", flush=True)
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout == '{"id":"a"}\n{"id":"b"}\nafter\n'
    assert "child-noise" in res.stderr
    assert "fd1-noise" in res.stderr
    assert "print-noise" in res.stderr
