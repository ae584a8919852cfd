"""`swerl rft` training tokens/s vs TRL `SFTTrainer(assistant_only_loss=True)` configured fairly, same model/data/steps.

The model is the real one, SmolLM2-135M-Instruct in fp32 (`SWERL_BENCH_TRAIN_MODEL=tiny`: the tiny tokenizer with a
hidden-256 x 4-layer Qwen2 body; benchmarks/models.py). Data: STEPS x BATCH multi-turn trajectories of 1-12 turns
(lengths vary) tokenized by the model's tokenizer, the same set for both, BATCH sequences per optimizer step (real
model: 2 x 4, which keeps a step's packed row and its activations within a few GB; tiny: 4 x 8); TRL renders
the same messages with the model's chat template (for SmolLM2 a copy marked with {% generation %} that renders the
same bytes, which `assistant_only_loss` needs). TRL runs the way a competent user runs it on a CPU without native
bf16: fp32 (`bf16=False`), no gradient checkpointing, `padding_free=True` (one packed row per step, no padding).
swerl packs each step into one row too (`--micro-batch-tokens` above a step's tokens). Both take the sequences in
file order (`--no-shuffle`; TRL `train_sampling_strategy="sequential"`), so each step holds the same sequences on
both sides: TRL's attention over a packed row costs the square of the row's length, so a different grouping
changes its time. Both time each optimizer step
inside the trainer (model load, data preparation and export excluded) and each runs in a fresh subprocess whose
peak RSS is recorded. Achieved FLOP/s (benchmarks/flops.py: useful model FLOPs only) is printed as a share of this
machine's measured fp32 matmul peak.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS_ENV = os.environ.get("SWERL_BENCH_RFT_STEPS")  # default: 2 steps on the real model, 4 on the tiny one
BATCH_ENV = os.environ.get("SWERL_BENCH_RFT_BATCH")  # default: 4 sequences per step on the real model, 8 on the tiny
THREADS = int(os.environ.get("OMP_NUM_THREADS", "2"))

TRL_SCRIPT = r"""
import json, sys, time
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from trl import SFTConfig, SFTTrainer
model_dir, data, out, steps, batch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
rows = [json.loads(l) for l in open(data)]
ds = Dataset.from_list([{"messages": r["messages"]} for r in rows])
tok = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="sdpa", dtype="float32")
cfg = SFTConfig(output_dir=out, assistant_only_loss=True, per_device_train_batch_size=batch, max_steps=steps,
                learning_rate=5e-4, use_cpu=True, report_to=[], save_strategy="no", logging_steps=1000,
                max_length=None, dataloader_num_workers=0, seed=0, disable_tqdm=True,
                train_sampling_strategy="sequential", bf16=False, gradient_checkpointing=False, padding_free=True)
class StepTimer(TrainerCallback):
    def __init__(self): self.times, self.cpu, self.t0, self.c0 = [], [], None, None
    def on_step_begin(self, args, state, control, **kw): self.t0, self.c0 = time.perf_counter(), time.process_time()
    def on_step_end(self, args, state, control, **kw):
        self.times.append(time.perf_counter() - self.t0); self.cpu.append(time.process_time() - self.c0)
timer = StepTimer()
trainer = SFTTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok, callbacks=[timer])
lengths = [len(x) for x in trainer.train_dataset["input_ids"]]
trainer.train()
print(json.dumps({"tokens": sum(lengths), "step_s": timer.times, "step_cpu_s": timer.cpu,
                  "config": {k: getattr(cfg, k) for k in ("bf16", "gradient_checkpointing", "padding_free",
                                                          "per_device_train_batch_size", "max_steps",
                                                          "train_sampling_strategy")}}))
"""

RSS_WRAPPER = (
    "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True);"
    "sys.stderr.write(p.stderr.decode()[-3000:] if p.returncode else '');"
    "print(p.stdout.decode().strip().splitlines()[-1] if p.returncode == 0 else 'FAILED');"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def _build(work: Path, model_dir: Path, steps: int, batch: int) -> tuple[Path, list[int]]:
    """`steps` x `batch` trajectories tokenized by the model's tokenizer, and their lengths."""
    from transformers import AutoTokenizer

    sys.path.insert(0, str(ROOT))
    from tests.training.fixtures import make_trajectory, write_jsonl

    tok = AutoTokenizer.from_pretrained(model_dir)
    recs = [make_trajectory(tok, i, n_turns=1 + (i * 7) % 12) for i in range(steps * batch)]
    lengths = []
    for r in recs:
        turns = r["turns"]
        n = len(turns[0]["prompt_token_ids"]) + sum(len(t["token_ids"]) for t in turns)
        lengths.append(n + sum(len(t["delta_token_ids"] or []) for t in turns[1:]))
    return write_jsonl(work / "traj.jsonl", recs), lengths


def _run(cmd: list[str]) -> tuple[str, int]:
    env = {**os.environ, "OMP_NUM_THREADS": str(THREADS), "DS_ACCELERATOR": "cpu"}
    p = subprocess.run([sys.executable, "-c", RSS_WRAPPER, *cmd], capture_output=True, env=env, cwd=ROOT)
    out = p.stdout.decode().strip().splitlines()
    if len(out) < 2 or out[0] == "FAILED":
        raise RuntimeError(f"bench run failed: {' '.join(cmd[:4])}...\n{p.stderr.decode()[-2000:]}")
    return out[0], int(out[1])


def main() -> None:
    """Print tokens/s, FLOP/s share of the matmul peak and peak RSS of both trainers, and the swerl/TRL ratio."""
    from benchmarks.flops import ROUNDS, machine_line, matmul_peak, model_flops
    from benchmarks.models import marked_template_copy, train_model

    print(machine_line(THREADS))

    with tempfile.TemporaryDirectory(prefix="bench-rft-") as tmp:
        work = Path(tmp)
        model = train_model(work)
        model_dir, steps = model.path, int(STEPS_ENV or (2 if model.real else 4))
        batch = int(BATCH_ENV or (4 if model.real else 8))
        trl_dir = marked_template_copy(model, work)
        data, lengths = _build(work, model_dir, steps, batch)
        peak = matmul_peak(THREADS)
        flops = model_flops(model_dir, lengths)
        swerl_args = ["--batch-size", str(batch), "--max-steps", str(steps), "--lr", "5e-4", "--warmup-steps", "0"]
        swerl_args += ["--max-seq-len", "16384", "--micro-batch-tokens", "65536", "--no-shuffle"]
        best_swerl: tuple[list[dict], int] | None = None
        best_trl: tuple[dict, int] | None = None
        for r in range(ROUNDS):  # the sides alternate, each keeps its fastest round: load drifts on a shared host
            out = work / f"swerl-{r}"
            cmd = [sys.executable, "-m", "swerl_cli", "rft", str(data), "--model", str(model_dir), "--output", str(out)]
            _, rss = _run([*cmd, *swerl_args])
            metrics = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
            if best_swerl is None or sum(m["step_s"] for m in metrics) < sum(m["step_s"] for m in best_swerl[0]):
                best_swerl = (metrics, rss)
            trl_args = [str(trl_dir), str(data), str(work / f"trl-{r}"), str(steps), str(batch)]
            trl_out, rss = _run([sys.executable, "-c", TRL_SCRIPT, *trl_args])
            trl_r = json.loads(trl_out)
            if best_trl is None or sum(trl_r["step_s"]) < sum(best_trl[0]["step_s"]):
                best_trl = (trl_r, rss)
        assert best_swerl is not None
        assert best_trl is not None
        (metrics, rss_swerl), (trl, rss_trl) = best_swerl, best_trl
        swerl_tokens = sum(m["tokens"] for m in metrics)
        swerl_steps = [m["step_s"] for m in metrics]
        swerl_cpu = sum(m["step_cpu_s"] for m in metrics)
    if swerl_tokens != trl["tokens"]:  # TRL renders messages with the template, swerl reads the recorded ids
        print(f"note: token counts differ (swerl {swerl_tokens}, TRL {trl['tokens']}); each side's own count is used")
    print(f"model: {model.label}")
    print(
        f"RFT, {steps} steps x {batch} sequences, {sum(lengths)} tokens, CPU fp32, {THREADS} threads; "
        f"fp32 matmul peak {peak / 1e9:.1f} GFLOP/s; model FLOPs {flops / 1e12:.3f} T"
    )
    print("swerl: packed rows, per-document attention (packed_sdpa), fused logprob head on trainable tokens, ZeRO-2")
    print(f"TRL:   SFTTrainer {json.dumps(trl['config'])}, attn sdpa (block mask from position_ids)")
    head = f"{'trainer':24} {'tokens':>7} {'train s':>8} {'tokens/s':>9} {'GFLOP/s':>8} {'% peak':>7}"
    print(f"{head} {'peak RSS MiB':>13}  per-step s")
    rows = [
        ("swerl rft", swerl_tokens, swerl_steps, rss_swerl),
        ("TRL SFTTrainer (fair)", trl["tokens"], trl["step_s"], rss_trl),
    ]
    for name, tokens, steps, rss in rows:
        secs = sum(steps)
        per = " ".join(f"{s:.2f}" for s in steps)
        work = flops * tokens / sum(lengths)
        print(
            f"{name:24} {tokens:7d} {secs:8.2f} {tokens / secs:9.0f} {work / secs / 1e9:8.2f} "
            f"{100 * work / secs / peak:6.1f}% {rss / 1024:13.0f}  {per}"
        )
    ratio = (swerl_tokens / sum(swerl_steps)) / (trl["tokens"] / sum(trl["step_s"]))
    ratio_cpu = (swerl_tokens / swerl_cpu) / (trl["tokens"] / sum(trl["step_cpu_s"]))
    print(f"CPU seconds in the steps (all threads): swerl {swerl_cpu:.1f}, TRL {sum(trl['step_cpu_s']):.1f}")
    print(f"ratio swerl/TRL tokens/s: {ratio:.2f}x wall, {ratio_cpu:.2f}x per CPU second (target >= 1.5x)")


if __name__ == "__main__":
    main()
