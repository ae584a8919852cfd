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


def test_rft_zero3_bf16_on_one_gpu_trains_as_the_cpu_does(tiny_model: Path, tmp_path: Path) -> None:
    """`swerl rft` on one GPU (ZeRO-3, bf16, gradient checkpointing) follows the CPU's fp32 loss curve on the same
    data and model, and its consolidated export loads."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    data = write_jsonl(tmp_path / "t.jsonl", [make_trajectory(tok, i, n_turns=1 + i % 3) for i in range(8)])
    curves = {}
    for where, dtype in (("gpu", "bf16"), ("cpu", "fp32")):
        out = tmp_path / where
        args = ["rft", str(data), "--model", str(tiny_model), "--output", str(out), "--zero-stage", "3"]
        args += ["--dtype", dtype, "--batch-size", "8", "--epochs", "10", "--lr", "2e-3"]
        args += ["--warmup-steps", "0", "--max-seq-len", "512", "--gradient-checkpointing"]
        env = {**os.environ, "DS_ACCELERATOR": "cuda"}
        if where == "cpu":
            env.update({"DS_ACCELERATOR": "cpu", "CUDA_VISIBLE_DEVICES": ""})
        proc = subprocess.run([sys.executable, "-m", "swerl_cli", *args], capture_output=True, env=env, timeout=900)
        assert proc.returncode == 0, proc.stderr.decode()[-3000:]
        curves[where] = [json.loads(x)["loss"] for x in (out / "metrics.jsonl").read_text().splitlines()]
    gpu, cpu = curves["gpu"], curves["cpu"]
    assert len(gpu) == len(cpu) == 10
    assert gpu[-1] < 0.85 * gpu[0]  # 7.65 -> 6.23 on the CPU (fp32 and bf16 alike)
    assert max(abs(a - b) for a, b in zip(gpu, cpu, strict=True)) < 0.05, (gpu, cpu)
    AutoModelForCausalLM.from_pretrained(tmp_path / "gpu")  # the consolidated ZeRO-3 export loads


def test_mfu_qwen2p5_1p5b_shape_at_32k_tokens(tmp_path: Path) -> None:
    """The GPU bench's swerl configuration at its target point: Qwen2.5-1.5B's shape, one 32k-token document per
    step, bf16, ZeRO-3, gradient checkpointing, rft and dapo losses; prints tokens/s, MFU and peak memory."""
    import argparse

    sys.path.insert(0, str(ROOT))
    from benchmarks.flops import bf16_matmul_peak, model_flops
    from benchmarks.gpu_train import build_model, run_config

    model_dir = build_model(tmp_path / "q1p5b", "1.5b", "cuda")  # random bf16 weights
    n = 32768
    args = argparse.Namespace(lengths=str(n), row_tokens=n, steps=2, device="cuda")
    rows = run_config("swerl", model_dir, True, args, timeout=600)  # in its own process, as the bench runs it
    peak, flops = bf16_matmul_peak(), model_flops(model_dir, [n])
    assert [r["trainer"] for r in rows] == ["swerl rft", "swerl dapo"], rows
    for r in rows:
        assert "error" not in r, r
        step = min(r["step_s"])
        print(
            f"\n{r['trainer']}: Qwen2.5-1.5B shape, 1 x {n} tokens, bf16, ZeRO-3, gradient checkpointing, "
            f"{r['attn']}: {step:.2f} s/step, {n / step:.0f} tokens/s, {100 * flops / step / peak:.1f}% of the "
            f"measured bf16 matmul peak ({peak / 1e12:.0f} TFLOP/s); peak memory {r['peak_gib']:.1f} GiB"
        )
        assert r["attn"] in ("flash_attention_2", "packed_sdpa")
        assert flops / step / peak > 0.2  # measured 2026-11-27 on an H200: docs/benchmarks.md
        assert r["peak_gib"] < 80  # checkpointing keeps a 32k row's activations small (none: 123 GiB on an H200)
