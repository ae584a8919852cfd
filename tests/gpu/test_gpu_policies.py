"""The GPU paths of collect's local policies, run by `make test-gpu` on a CUDA host (skipped elsewhere).

- `hf` on cuda: bf16 by default; in fp32, the sampled ids' logprobs equal a CPU teacher-forced scoring of the same
  sequence.
- `vllm` (needs `pip install 'swerl-cli[vllm]'`): the real AsyncLLM engine serves concurrent requests from a
  Qwen2.5-0.5B-shaped random-weight model; ids and logprobs are aligned and agree with a transformers scoring on
  the GPU; tokens/s is printed for the record.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from swerl_cli.policy.base import EpisodeInfo, Sampling

pytestmark = [pytest.mark.gpu, pytest.mark.train]
MESSAGES = [
    {"role": "system", "content": "You are an autonomous software engineer working in a shell."},
    {"role": "user", "content": "parse() drops the last field of a CSV line. Fix it."},
]


def score(model_dir: str, prompt: list[int], ids: list[int], device: str):
    """Teacher-forced logprobs of `ids` after `prompt` under the transformers model, in float32."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(device).eval()
    with torch.no_grad():
        logits = model(torch.tensor([prompt + ids], device=device)).logits[0, len(prompt) - 1 : -1].float()
    return torch.log_softmax(logits, -1).gather(1, torch.tensor(ids, device=device)[:, None])[:, 0].cpu().tolist()


def test_hf_policy_on_cuda_matches_cpu_scoring(tiny_model):
    from swerl_cli.policy.hf import HFPolicy

    assert HFPolicy(str(tiny_model), device="cuda").dtype == "bfloat16"  # the default: the trainer's dtype on CUDA
    policy = HFPolicy(str(tiny_model), device="cuda", dtype="float32")  # fp32 on both sides: an exact comparison
    comp = asyncio.run(policy.acomplete(MESSAGES, Sampling(max_new_tokens=48, seed=0)))
    assert len(comp.token_ids) == len(comp.logprobs) > 0
    ref = score(str(tiny_model), comp.prompt_token_ids, comp.token_ids, "cpu")
    assert comp.logprobs == pytest.approx(ref, abs=1e-3)


@pytest.fixture(scope="module")
def qwen05_shape(tmp_path_factory):
    """Random weights in Qwen2.5-0.5B's shape (our 2k-token vocabulary): head_dim 64 suits every vLLM kernel."""
    from swerl_cli.training.tiny import build_tiny_model

    return build_tiny_model(
        tmp_path_factory.mktemp("qwen05"),
        hidden_size=896,
        num_layers=24,
        intermediate_size=4864,
        num_heads=14,
        num_kv_heads=2,
    )


def test_vllm_engine_serves_concurrent_requests_with_exact_logprobs(qwen05_shape):
    pytest.importorskip("vllm")
    from swerl_cli.policy.vllm import VLLMPolicy

    engine = {"dtype": "bfloat16", "gpu_memory_utilization": 0.5, "max_model_len": 4096, "seed": 0}
    policy = VLLMPolicy(str(qwen05_shape), engine_kwargs=engine)
    n, sampling = 32, Sampling(max_new_tokens=256)

    async def main():
        try:
            await policy.acomplete(MESSAGES, Sampling(max_new_tokens=8))  # engine start and warm-up
            t0 = time.perf_counter()
            comps = await asyncio.gather(
                *(
                    policy.acomplete(MESSAGES, sampling, episode=EpisodeInfo(f"t{i}", 0, "gpu", {}, 4096))
                    for i in range(n)
                )
            )
            return comps, time.perf_counter() - t0
        finally:
            await policy.aclose()

    comps, wall = asyncio.run(main())
    tokens = sum(len(c.token_ids) for c in comps)
    print(f"\nvllm policy: {n} concurrent requests, {tokens} tokens in {wall:.2f} s = {tokens / wall:.0f} tokens/s")
    for c in comps:
        assert c.token_ids
        assert len(c.logprobs) == len(c.token_ids)
        assert c.prompt_token_ids == comps[0].prompt_token_ids
    ref = score(str(qwen05_shape), comps[0].prompt_token_ids, comps[0].token_ids, "cuda")
    diffs = [abs(a - b) for a, b in zip(comps[0].logprobs, ref, strict=True)]
    assert sum(diffs) / len(diffs) < 0.05  # bf16 engine vs fp32 scoring of the same tokens
