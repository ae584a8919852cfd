"""Model FLOPs of a training pass and this machine's measured fp32 matmul peak (shared by the rft and dapo benches).

FLOPs count the useful work of forward + backward, the same for every trainer on the same data: 6 x (parameters in
matmuls, lm_head included, embedding lookup excluded) per token, plus causal attention within each document,
6 x layers x hidden x L^2 / 2 x 2 (QK^T and AV) per document of L tokens. Padding, recomputation and dense masks
are not counted: a trainer that does them pays in time, not in credited FLOPs. On a GPU the peak is the bf16 one
(`bf16_matmul_peak`, the GPU bench and tests).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

PEAK_SCRIPT = r"""
import json, sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
n, best = 2048, 0.0
a, b = torch.randn(n, n), torch.randn(n, n)
for _ in range(3):
    a @ b
for _ in range(7):
    t0 = time.perf_counter()
    for _ in range(4):
        a @ b
    best = max(best, 4 * 2 * n**3 / (time.perf_counter() - t0))
print(json.dumps({"flops": best, "threads": torch.get_num_threads()}))
"""


ROUNDS = int(os.environ.get("SWERL_BENCH_TRAIN_ROUNDS", "2"))


def machine_line(threads: int) -> str:
    """The load this run shares the machine with: OpenMP threads that wait for a descheduled sibling spin, so a
    busy host inflates both sides' step times unevenly and the ratio means little."""
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    busy = load >= 0.5 * cores
    note = f"  WARNING: busy machine (load {load:.1f} on {cores} cores): rerun it idle" if busy else ""
    line = f"machine: {cores} cores, load average {load:.2f} at start, {threads} threads per trainer"
    return f"{line}, best of {ROUNDS} rounds{note}"


def matmul_peak(threads: int) -> float:
    """Best fp32 FLOP/s of a 2048^2 matmul with `threads` threads, measured in a fresh process (best of 7)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(threads)], capture_output=True, env=env, check=True)
    return float(json.loads(out.stdout.decode().strip().splitlines()[-1])["flops"])


def bf16_matmul_peak(n: int = 8192, reps: int = 10) -> float:
    """Best bf16 FLOP/s of an n^3 matmul on the current CUDA device, in this process (best of 5 timed groups of
    `reps` products after 3 warm-ups, random data: zeros run faster on Hopper)."""
    import torch

    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    best = 0.0
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            a @ b
        torch.cuda.synchronize()
        best = max(best, reps * 2 * n**3 / (time.perf_counter() - t0))
    return best


def model_flops(model_dir: Path, doc_lengths: list[int]) -> float:
    """Forward + backward FLOPs of training on documents of these lengths (see the module docstring)."""
    cfg = json.loads((Path(model_dir) / "config.json").read_text())
    h, layers, inter = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    heads, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    head_dim = cfg.get("head_dim") or h // heads
    attn_proj = h * heads * head_dim * 2 + h * kv * head_dim * 2  # q, o and k, v
    per_layer = attn_proj + 3 * h * inter  # + gate, up, down
    matmul_params = layers * per_layer + h * cfg["vocab_size"]  # + lm_head
    tokens = sum(doc_lengths)
    attention = 6 * layers * heads * head_dim * sum(n * n for n in doc_lengths)  # 2 matmuls x causal half x 3
    return 6.0 * matmul_params * tokens + attention
