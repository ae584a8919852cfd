"""`swerl rft` training tokens/s vs TRL `SFTTrainer(assistant_only_loss=True)`: same model, data, steps, machine.

The model is the tiny tokenizer with a larger Qwen2 body (hidden 256, 4 layers) so the run is compute-bound. Data: 64
multi-turn trajectories of 1-12 turns (lengths vary, so padding matters). Both train 8 sequences per step for
SWERL_BENCH_RFT_STEPS steps (default 4) in fp32 on CPU; each runs in a fresh subprocess whose peak RSS is recorded.
tokens/s counts real (non-padding) tokens of the sequences trained, over the training loop's wall time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS = int(os.environ.get("SWERL_BENCH_RFT_STEPS", "4"))
BATCH = 8

TRL_SCRIPT = r"""
import json, sys, time
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer
model_dir, data, out, steps, batch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
rows = [json.loads(l) for l in open(data)]
ds = Dataset.from_list([{"messages": r["messages"]} for r in rows])
tok = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="sdpa")
cfg = SFTConfig(output_dir=out, assistant_only_loss=True, per_device_train_batch_size=batch, max_steps=steps,
                learning_rate=5e-4, use_cpu=True, report_to=[], save_strategy="no", logging_steps=1000,
                max_length=None, dataloader_num_workers=0, seed=0, disable_tqdm=True)
trainer = SFTTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok)
lengths = [len(x) for x in trainer.train_dataset["input_ids"]]
t0 = time.perf_counter(); trainer.train(); dt = time.perf_counter() - t0
seen = sum(lengths[: steps * batch]) if steps * batch <= len(lengths) else sum(lengths) * steps * batch / len(lengths)
print(json.dumps({"tokens": seen, "seconds": dt}))
"""

RSS_WRAPPER = (
    "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True);"
    "sys.stderr.write(p.stderr.decode()[-3000:] if p.returncode else '');"
    "print(p.stdout.decode().strip().splitlines()[-1] if p.returncode == 0 else 'FAILED');"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def _build(work: Path) -> tuple[Path, Path]:
    """The bench model (tiny tokenizer, hidden 256 x 4 layers) and 64 trajectories with token ids."""
    from transformers import AutoTokenizer

    from swerl_cli.training.tiny import build_tiny_model

    sys.path.insert(0, str(ROOT))
    from tests.training.fixtures import make_trajectory, write_jsonl

    # A compute-bound size (hidden 256, 4 layers) built through the same code as the tiny test model.
    model_dir = build_tiny_model(work / "model", hidden_size=256, num_layers=4, intermediate_size=1024)
    tok = AutoTokenizer.from_pretrained(model_dir)
    recs = [make_trajectory(tok, i, n_turns=1 + (i * 7) % 12) for i in range(64)]
    return model_dir, write_jsonl(work / "traj.jsonl", recs)


def _run(cmd: list[str]) -> tuple[str, int]:
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2"), "DS_ACCELERATOR": "cpu"}
    p = subprocess.run([sys.executable, "-c", RSS_WRAPPER, *cmd], capture_output=True, env=env, cwd=ROOT)
    out = p.stdout.decode().strip().splitlines()
    if len(out) < 2 or out[0] == "FAILED":
        raise RuntimeError(f"bench run failed: {' '.join(cmd[:4])}...\n{p.stderr.decode()[-2000:]}")
    return out[0], int(out[1])


def main() -> None:
    """Print tokens/s and peak RSS of both trainers and the swerl/TRL ratio."""
    with tempfile.TemporaryDirectory(prefix="bench-rft-") as tmp:
        work = Path(tmp)
        model_dir, data = _build(work)
        args = [
            "--batch-size",
            str(BATCH),
            "--max-steps",
            str(STEPS),
            "--lr",
            "5e-4",
            "--warmup-steps",
            "0",
            "--max-seq-len",
            "8192",
            "--no-shuffle",
        ]
        _, rss_swerl = _run(
            [
                sys.executable,
                "-m",
                "swerl_cli",
                "rft",
                str(data),
                "--model",
                str(model_dir),
                "--output",
                str(work / "swerl"),
                *args,
            ]
        )
        metrics = [json.loads(x) for x in (work / "swerl" / "metrics.jsonl").read_text().splitlines()]
        swerl_tokens = sum(m["tokens"] for m in metrics)
        swerl_s = sum(m["tokens"] / m["tokens_per_s"] for m in metrics)
        trl_out, rss_trl = _run(
            [sys.executable, "-c", TRL_SCRIPT, str(model_dir), str(data), str(work / "trl"), str(STEPS), str(BATCH)]
        )
        trl = json.loads(trl_out)
    rows = [
        ("swerl rft (packed, ZeRO-2)", swerl_tokens, swerl_s, rss_swerl),
        ("TRL SFTTrainer (assistant_only_loss)", trl["tokens"], trl["seconds"], rss_trl),
    ]
    print(f"{'trainer':40} {'tokens':>8} {'train s':>8} {'tokens/s':>9} {'peak RSS MiB':>13}")
    for name, tokens, secs, rss in rows:
        print(f"{name:40} {tokens:8.0f} {secs:8.2f} {tokens / secs:9.0f} {rss / 1024:13.0f}")
    ratio = (swerl_tokens / swerl_s) / (trl["tokens"] / trl["seconds"])
    print(f"ratio swerl/TRL tokens/s: {ratio:.2f}x (target >= 1.5x); {STEPS} steps x {BATCH} sequences")


if __name__ == "__main__":
    main()
