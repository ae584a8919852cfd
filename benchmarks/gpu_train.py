"""Training throughput on one GPU: `swerl rft` and `swerl dapo` steps vs TRL's SFTTrainer, on random-weight
Qwen2-shaped models at long context (`make bench-gpu`; docs/benchmarks.md has the numbers and the machine).

    python -m benchmarks.gpu_train [--sizes 1.5b,0.5b] [--lengths 8192,32768] [--row-tokens 32768] [--steps 3]
                                   [--gc both|on|off] [--trainers swerl,trl] [--deadline-s S] [--json FILE]

Workload: every optimizer step trains one packed row of `--row-tokens` tokens (default 32,768) made of documents of
L tokens each (L = 8,192: four documents; L = 32,768: one), all positions trainable, random token ids. Models:
Qwen2.5-0.5B's shape (hidden 896, 24 layers, 14/2 heads, MLP 4,864) and Qwen2.5-1.5B's (1,536, 28 layers, 12/2
heads, MLP 8,960), both with Qwen2's 151,936-token vocabulary and tied embeddings, random weights saved in bf16.

- swerl: the engine `swerl rft` and `swerl dapo` run (training/engine.py): DeepSpeed ZeRO-3 on one GPU, bf16 with
  fp32 master weights, AdamW, per-document attention (flash-attn's varlen kernel when installed, else `packed_sdpa`:
  PyTorch's fused causal SDPA per document), the fused chunked logprob head; with and without gradient
  checkpointing. rft: the masked-NLL loss of `swerl rft`; dapo: the clipped DAPO loss of `swerl dapo` on the same
  row (advantages +-1, pi_old near the current policy), and apart from the step, the no-grad theta_old pass that
  `--old-logprobs trainer` adds once per step.
- TRL: `SFTTrainer` as its docs set it up on a GPU: bf16 (the model loaded in bf16, `bf16=True`), `padding_free=True`
  (the L-token documents of a step flattened into one row with restarting position_ids), gradient checkpointing on
  and off as for swerl, attention `flash_attention_2` when flash-attn is installed, else `sdpa` (transformers then
  turns the restarts into a block mask; TRL's docs name FlashAttention 2/3 for padding-free, which cannot be
  installed without network on the lent machine), no DeepSpeed (one GPU; the trainer's own AdamW on bf16 weights).

Each configuration runs in a fresh process (benchmarks/gpu_workers.py): one warm-up step, then `--steps` timed
steps (each ended by a CUDA synchronize); the fastest is reported with tokens/s, model FLOP/s as a share of the bf16
matmul peak measured in the same run (benchmarks/flops.py: useful FLOPs only, recomputation not credited), and the
peak GPU memory allocated. A configuration that runs out of memory is reported as OOM. Without a GPU (`--device
cpu`) it runs a tiny shape in fp32 so the code path can be checked anywhere; those numbers mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.flops import bf16_matmul_peak, matmul_peak, model_flops
from benchmarks.gpu_workers import MARK, VARIANTS, VOCAB

ROOT = Path(__file__).resolve().parents[1]
# name -> (hidden, layers, heads, kv heads, MLP); Qwen2.5-0.5B and -1.5B, and a CPU-sized shape for checking the path
SHAPES = {
    "0.5b": (896, 24, 14, 2, 4864),
    "1.5b": (1536, 28, 12, 2, 8960),
    "tiny": (128, 2, 4, 2, 256),
}


def build_model(out: Path, shape: str, device: str) -> Path:
    """Random weights in `shape` (bf16 on GPU, fp32 on CPU) with the tiny tokenizer, saved with save_pretrained."""
    from swerl_cli.training.tiny import build_tiny_model

    hidden, layers, heads, kv, mlp = SHAPES[shape]
    return build_tiny_model(
        out, hidden_size=hidden, num_layers=layers, intermediate_size=mlp, num_heads=heads, num_kv_heads=kv,
        vocab_size=VOCAB, max_positions=131072, device=device, dtype="bfloat16" if device == "cuda" else "float32",
    )  # fmt: skip


def bf16_peak(device: str) -> float:
    """The matmul peak this bench divides by (fp32 on CPU)."""
    return bf16_matmul_peak() if device == "cuda" else matmul_peak(int(os.environ.get("OMP_NUM_THREADS", "2")))


def _versions() -> str:
    import importlib.metadata as md

    out = []
    for name in ("torch", "transformers", "deepspeed", "trl", "flash-attn"):
        try:
            out.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            out.append(f"{name} absent")
    return ", ".join(out)


def run_config(kind: str, model: Path, gc: bool, args: argparse.Namespace, timeout: float) -> list[dict]:
    """One configuration in a fresh process (`args`: lengths, row_tokens, steps, device): its result rows."""
    cmd = [sys.executable, "-m", "benchmarks.gpu_workers", kind, str(model)]
    cmd += ["--gc", "on" if gc else "off", "--lengths", args.lengths, "--row-tokens", str(args.row_tokens)]
    cmd += ["--steps", str(args.steps)]
    env = {**os.environ, "DS_ACCELERATOR": "cuda" if args.device == "cuda" else "cpu"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH")) if p)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT, timeout=timeout)
        out, err, rc = p.stdout.decode(), p.stderr.decode(), p.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = (e.stdout or b"").decode(), (e.stderr or b"").decode(), "timeout"
    rows = [json.loads(x.removeprefix(MARK)) for x in out.splitlines() if x.startswith(MARK)]
    for r in rows:
        r["process_s"] = round(time.perf_counter() - t0, 1)
    if rc != 0:
        tail = " | ".join(err.strip().splitlines()[-6:])[-1500:]
        print(f"  {kind} gc={gc}: exit {rc}: {tail}", file=sys.stderr, flush=True)
        if not rows:
            rows = [{"trainer": kind, "gc": gc, "error": f"exit {rc}"}]
    return rows


def _table(rows: list[dict], flops_of: dict[tuple[str, int], float], peak: float) -> str:
    head = f"{'model':5} {'trainer':21} {'GC':3} {'L':>6} {'docs':>4} {'step s':>7} {'tokens/s':>9} {'TFLOP/s':>8}"
    lines = [f"{head} {'MFU':>6} {'peak GiB':>9}  attention"]
    for r in rows:
        name = f"{r.get('size', '?'):5} {r['trainer']:21} {'on' if r.get('gc') else 'off':3} {r.get('length', 0):>6}"
        name += f" {r.get('docs', 0):>4}"
        if "error" in r or not r.get("step_s"):
            lines.append(f"{name} {r.get('error', 'no steps'):>7}")
            continue
        step = min(r["step_s"])
        work = flops_of[(r["size"], r["length"])] / step
        mem = f"{r['peak_gib']:9.1f}" if r.get("peak_gib") is not None else f"{'-':>9}"
        lines.append(
            f"{name} {step:7.3f} {r['tokens'] / step:9.0f} {work / 1e12:8.1f} {100 * work / peak:5.1f}% {mem}  "
            f"{r.get('attn', '')}"
        )
    return "\n".join(lines)


def _configurations(rows: list[dict]) -> list[str]:
    """Each trainer's configuration as it ran (the workers put it in their rows), one line per distinct one."""
    lines: list[str] = []
    for r in rows:
        if "config" in r:
            settings = ", ".join(f"{k}={v}" for k, v in r["config"].items())
            line = f"{r['trainer']}: attention {r.get('attn')}, {settings}"
            if line not in lines:
                lines.append(line)
    return lines


def _ratios(rows: list[dict]) -> list[str]:
    """swerl rft tokens/s over TRL's, per (size, GC, length) where both ran."""
    best = {(r["size"], r["trainer"], r["gc"], r["length"]): min(r["step_s"]) for r in rows if r.get("step_s")}
    out = []
    for (size, trainer, gc, length), step in sorted(best.items()):
        trl = best.get((size, "TRL SFTTrainer", gc, length))
        if trainer == "swerl rft" and trl:
            out.append(f"{size} GC {'on' if gc else 'off'} L={length}: swerl rft / TRL = {trl / step:.2f}x")
    return out


def main(argv: list[str] | None = None) -> int:
    """Build the models, run each configuration in its own process, print the table (and --json rows)."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu_train")
    ap.add_argument("--sizes", default=None, help="comma list of 0.5b, 1.5b, tiny (default: 1.5b,0.5b; CPU: tiny)")
    ap.add_argument("--lengths", default=None, help="document lengths (default 8192,32768; CPU: 256,1024)")
    ap.add_argument("--row-tokens", type=int, default=None, help="tokens per step (default 32768; CPU: 1024)")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per configuration (after one warm-up)")
    ap.add_argument("--gc", default="both", choices=("both", "on", "off"), help="gradient checkpointing")
    ap.add_argument("--trainers", default="swerl,trl", help="comma list of swerl, trl")
    ap.add_argument("--variants", default="", help=f"comma list of {', '.join(VARIANTS)} (run at GC off)")
    ap.add_argument("--deadline-s", type=float, default=None, help="start no configuration after this many seconds")
    ap.add_argument("--timeout-s", type=float, default=600.0, help="limit of one configuration's process")
    ap.add_argument("--json", default=None, help="append every result row to this JSONL file")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    args = ap.parse_args(argv)

    import torch

    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    gpu = args.device == "cuda"
    sizes = (args.sizes or ("1.5b,0.5b" if gpu else "tiny")).split(",")
    args.lengths = args.lengths or ("8192,32768" if gpu else "256,1024")
    args.row_tokens = args.row_tokens or (32768 if gpu else 1024)
    lengths = [int(x) for x in args.lengths.split(",")]
    gcs = {"both": [True, False], "on": [True], "off": [False]}[args.gc]
    trainers = args.trainers.split(",")
    start = time.perf_counter()
    name = torch.cuda.get_device_name() if gpu else f"CPU, {os.cpu_count()} cores"
    print(f"device: {name}; {_versions()}", flush=True)
    peak = bf16_peak(args.device)
    print(f"{'bf16' if gpu else 'fp32'} matmul peak measured now: {peak / 1e12:.1f} TFLOP/s", flush=True)
    rows: list[dict] = []
    flops_of: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        for size in sizes:
            model = build_model(Path(tmp) / size, size, args.device)
            for length in lengths:
                flops_of[(size, length)] = model_flops(model, [length] * max(1, args.row_tokens // length))
            plan = [(kind, gc) for gc in gcs for kind in trainers]
            plan += [(v, False) for v in args.variants.split(",") if v]
            for kind, gc in plan:
                if args.deadline_s is not None and time.perf_counter() - start > args.deadline_s:
                    got = [{"size": size, "trainer": kind, "gc": gc, "error": "not run (deadline)"}]
                else:
                    got = run_config(kind, model, gc, args, args.timeout_s)
                for r in got:
                    r["size"] = size
                    print(json.dumps(r), flush=True)
                    if args.json:
                        with open(args.json, "a") as f:
                            f.write(json.dumps(r) + "\n")
                rows += got
    print(f"\nrow: {args.row_tokens} tokens per optimizer step; L = document length; fastest of {args.steps} steps")
    print(_table(rows, flops_of, peak))
    print("configurations as run:")
    for line in _configurations(rows):
        print(f"  {line}")
    for line in _ratios(rows):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
