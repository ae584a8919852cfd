"""The GPU paths of the training engine, run by `make test-gpu` on a CUDA host (skipped elsewhere).

- bf16 + flash-attn variable-length attention on packed rows gives each document's own logprobs (needs flash-attn;
  `packed_sdpa` is checked against it, and stands in when flash-attn is absent).
- `swerl rft` on one GPU: ZeRO-3, bf16, SP=1, loss falls and the checkpoint reloads.
- MFU: one optimizer step of a Qwen2.5-1.5B-shaped random model (hidden 1536, 28 layers, 12/2 heads, MLP 8960, vocab
  151936) on one 32k-token sequence, bf16, ZeRO-3, gradient checkpointing; achieved FLOP/s is printed as a share of
  the measured bf16 matmul peak of this GPU.
Written against the documented transformers / DeepSpeed / flash-attn APIs; not run in the session that wrote them
(no GPU was lent).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.training.fixtures import make_trajectory, write_jsonl

pytestmark = [pytest.mark.gpu, pytest.mark.train]
ROOT = Path(__file__).resolve().parents[2]


def _packed_row(lengths: list[int], vocab: int, device: str):
    import torch

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, vocab - 1, (1, sum(lengths)), generator=g)
    pos = torch.cat([torch.arange(n) for n in lengths]).unsqueeze(0)
    return ids.to(device), pos.to(device)


@pytest.mark.parametrize("impl", ["flash_attention_2", "packed_sdpa"])
def test_bf16_packed_rows_attend_within_documents_on_gpu(tiny_model: Path, impl: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from swerl_cli.training import attention
    from swerl_cli.training.logprobs import target_logprobs

    if impl == "flash_attention_2":
        pytest.importorskip("flash_attn")
    attention.register()
    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.bfloat16, attn_implementation=impl).cuda()
    lengths = [300, 17, 1200, 64]
    ids, pos = _packed_row(lengths, model.config.vocab_size, "cuda")
    targets = torch.cat([ids[:, 1:], torch.full_like(ids[:, :1], -1)], dim=1)
    with torch.no_grad():
        packed = target_logprobs(model, ids, pos, targets)
        alone, start = [], 0
        for n in lengths:
            sl = slice(start, start + n)
            t = targets[:, sl].clone()
            t[0, -1] = -1
            alone.append(target_logprobs(model, ids[:, sl], pos[:, sl], t))
            start += n
    ends = torch.tensor([sum(lengths[: i + 1]) - 1 for i in range(len(lengths))], device="cuda")
    keep = torch.ones(ids.shape[1], dtype=torch.bool, device="cuda")
    keep[ends] = False  # a document's last position predicts the next document's first token when packed
    torch.testing.assert_close(packed[0, keep], torch.cat(alone, dim=1)[0, keep], rtol=0.05, atol=0.05)


def test_rft_zero3_bf16_on_one_gpu(tiny_model: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    data = write_jsonl(tmp_path / "t.jsonl", [make_trajectory(tok, i, n_turns=1 + i % 3) for i in range(8)])
    out = tmp_path / "out"
    args = ["rft", str(data), "--model", str(tiny_model), "--output", str(out), "--zero-stage", "3"]
    args += ["--dtype", "bf16", "--sequence-parallel", "1", "--batch-size", "8", "--epochs", "10", "--lr", "2e-3"]
    args += ["--warmup-steps", "0", "--max-seq-len", "512", "--gradient-checkpointing"]
    proc = subprocess.run([sys.executable, "-m", "swerl_cli", *args], capture_output=True, timeout=900)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    losses = [json.loads(x)["loss"] for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(losses) == 10
    assert losses[-1] < 0.8 * losses[0]
    AutoModelForCausalLM.from_pretrained(out)  # the consolidated ZeRO-3 export loads


def test_mfu_qwen2p5_1p5b_shape_at_32k_tokens(tmp_path: Path) -> None:
    """One engine step per repetition on a single 32k-token sequence; prints tokens/s and MFU."""
    import torch

    sys.path.insert(0, str(ROOT))
    from benchmarks.flops import bf16_matmul_peak, model_flops
    from benchmarks.gpu_train import build_model

    from swerl_cli.training.batching import collate
    from swerl_cli.training.data import Sample
    from swerl_cli.training.engine import TrainEngine
    from swerl_cli.training.losses import get_loss
    from swerl_cli.training.rft import rft_loss_fn
    from swerl_cli.training.train_config import TrainConfig

    model_dir = build_model(tmp_path / "q1p5b", "1.5b", "cuda")  # random bf16 weights, the GPU bench's shape
    os.environ.setdefault("MASTER_PORT", "29531")
    eng = TrainEngine.from_config(
        TrainConfig(model=str(model_dir), zero_stage=3, dtype="bf16", gradient_checkpointing=True, lr=1e-5),
        total_steps=4,
    )
    assert eng.module.config._attn_implementation in ("flash_attention_2", "packed_sdpa")
    n = 32768
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 151936, (n,), generator=g).tolist()
    mask = [0] + [1] * (n - 1)
    sample = Sample("s", "gpu", 1, ids, mask, [0.0] * n, False)
    batch = collate([sample])
    eng.train_step([batch], rft_loss_fn(get_loss("sft", None, "rft"), n - 1))  # warm-up (allocator, kernels)
    torch.cuda.synchronize()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        stats = eng.train_step([batch], rft_loss_fn(get_loss("sft", None, "rft"), n - 1))
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    step = min(times)
    flops = model_flops(model_dir, [n])
    peak = bf16_matmul_peak()
    print(
        f"\nQwen2.5-1.5B shape, 1 x {n} tokens, bf16, ZeRO-3, gradient checkpointing, "
        f"{eng.module.config._attn_implementation}: {step:.2f} s/step, {n / step:.0f} tokens/s, "
        f"{flops / step / 1e12:.1f} TFLOP/s = {100 * flops / step / peak:.1f}% of the measured bf16 matmul peak "
        f"({peak / 1e12:.0f} TFLOP/s); peak memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB"
    )
    assert stats["nll_sum"] == stats["nll_sum"]  # finite loss (not NaN)
    assert flops / step / peak > 0.05
