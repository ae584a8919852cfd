"""Time per DAPO update: `swerl dapo` vs TRL `GRPOTrainer(loss_type="dapo")` computing the same loss, same batch.

Model: the real one, SmolLM2-135M-Instruct in fp32 (`SWERL_BENCH_TRAIN_MODEL=tiny`: the tiny tokenizer with a
hidden-256 x 4-layer Qwen2 body; benchmarks/models.py). Batch: groups of graded multi-turn trajectories (prompt 256
tokens, 1-6 turns of 20-120 action tokens + observations, lengths vary), all groups mixed so every sample is kept;
SmolLM2: 2 groups x 4, 4 per optimizer step -> 2 steps; tiny: 4 groups x 8, 8 per step -> 4 steps. The records
carry the model's exact logprobs as the sampler's (as an fp32 vLLM sampler gives), so step 1 is on-policy on both sides.
- swerl: `swerl dapo` in a subprocess, `--old-logprobs sampler` (no second forward) and `trainer` (a no-grad
  theta_old pass first); per-step times from its metrics (packed rows, per-document attention, ZeRO-2).
- TRL: the same steps (same samples per step) through `GRPOTrainer.compute_loss` with loss_type="dapo",
  epsilon 0.2 / epsilon_high 0.3, beta 0, on padded prompt/completion tensors (observations masked by
  completion_mask), then backward, clip 1.0 and AdamW; GRPOTrainer generates its own rollouts, so the update is
  driven directly on the given batch. Configured fairly: `bf16=False` (this CPU has no native bf16; TRL's default
  emulates it), no gradient checkpointing. TRL reuses the current logprobs as pi_old on the first pass (no extra
  pass). Each step is timed around loss + backward + clip + AdamW (setup excluded).
Both runs print their first-step loss: they must agree (same objective, on-policy step 1). Achieved FLOP/s
(benchmarks/flops.py, useful model FLOPs only) is printed as a share of the measured fp32 matmul peak.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SIZES = {True: (2, 4, 4), False: (4, 8, 8)}  # real model?: (groups, group size, samples per optimizer step)

TRL_SCRIPT = r"""
import json, sys, time, torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer
model_dir, steps_file, out, batch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
steps = json.load(open(steps_file))
tok = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="sdpa", dtype=torch.float32)
cfg = GRPOConfig(output_dir=out, loss_type="dapo", epsilon=0.2, epsilon_high=0.3, beta=0.0, use_cpu=True,
                 per_device_train_batch_size=batch, num_generations=batch, learning_rate=1e-6, weight_decay=0.1,
                 max_grad_norm=1.0, report_to=[], save_strategy="no", disable_tqdm=True,
                 bf16=False, gradient_checkpointing=False)
trainer = GRPOTrainer(model=model, args=cfg, reward_funcs=lambda completions, **kw: [0.0] * len(completions),
                      train_dataset=Dataset.from_list([{"prompt": "x"}] * batch), processing_class=tok)
trainer.current_gradient_accumulation_steps = 1
opt = torch.optim.AdamW(model.parameters(), lr=1e-6, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
model.train()
pad = tok.pad_token_id
def padded(rows, left, fill=None):
    n, fill = max(len(r) for r in rows), pad if fill is None else fill
    ids = [([fill] * (n - len(r)) + r) if left else (r + [fill] * (n - len(r))) for r in rows]
    return torch.tensor(ids)
losses, times, cpu = [], [], []
for step in steps:
    t0, c0 = time.perf_counter(), time.process_time()
    prompts = [s["prompt"] for s in step]; comps = [s["completion"] for s in step]; masks = [s["mask"] for s in step]
    inputs = {
        "prompt_ids": padded(prompts, True), "prompt_mask": padded([[1] * len(p) for p in prompts], True, 0),
        "completion_ids": padded(comps, False), "completion_mask": padded(masks, False, 0),
        "advantages": torch.tensor([s["advantage"] for s in step]),
        "num_items_in_batch": torch.tensor(float(sum(sum(m) for m in masks))),
    }
    loss = trainer.compute_loss(model, inputs)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); opt.zero_grad()
    times.append(time.perf_counter() - t0); cpu.append(time.process_time() - c0)
    losses.append(float(loss))
print(json.dumps({"step_s": times, "step_cpu_s": cpu, "first_loss": losses[0], "steps": len(losses),
                  "config": {"bf16": cfg.bf16, "gradient_checkpointing": cfg.gradient_checkpointing,
                             "loss_type": cfg.loss_type, "per_device_train_batch_size": batch}}))
"""


def _build(work: Path, model_dir: Path, groups: int, g: int) -> tuple[Path, list[int]]:
    """groups x g graded trajectories with the model's exact logprobs, and their lengths."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from swerl_cli.streams.records import Located
    from swerl_cli.training.data import trajectory_to_sample

    vocab_size = len(AutoTokenizer.from_pretrained(model_dir))
    model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="sdpa", dtype=torch.float32)
    sys.path.insert(0, str(ROOT))
    from tests.records import rollout

    rng = random.Random(0)

    def ids(n: int) -> list[int]:
        return [rng.randrange(5, vocab_size - 3) for _ in range(n)]

    recs, lengths = [], []
    for k in range(groups):
        prompt = ids(256)
        for s in range(g):
            turns = 1 + (k * g + s) * 5 % 6
            rec = rollout(
                f"task{k}",
                s,
                resolved=s % 3 == 0,
                turns=turns,
                prompt=prompt,
                token_ids=[ids(rng.randint(20, 120)) for _ in range(turns)],
            )
            # the sampler's logprobs = the model's own (an exact fp32 sampler): step 1 is on-policy
            sample = trajectory_to_sample(Located("bench", 0, rec), None, mask_format_errors=False)
            with torch.no_grad():
                x = torch.tensor([sample.input_ids])
                lp = torch.log_softmax(model(input_ids=x, use_cache=False).logits[0, :-1].float(), dim=-1)
                token_lp = lp.gather(1, x[0, 1:, None]).squeeze(1).tolist()
            pos = len(rec["turns"][0]["prompt_token_ids"])
            for t, turn in enumerate(rec["turns"]):  # (named k before: it overwrote the group index, ids collided)
                if t > 0:
                    pos += len(turn["delta_token_ids"])
                turn["logprobs"] = token_lp[pos - 1 : pos - 1 + len(turn["token_ids"])]
                pos += len(turn["token_ids"])
            recs.append(rec)
            lengths.append(len(sample))
    data = work / "graded.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return data, lengths


def _trl_steps(data: Path, summary: dict, work: Path, batch: int) -> Path:
    """The same optimizer steps for TRL: prompt = turn-0 prompt, completion = the rest, mask = action tokens."""
    from swerl_cli.streams.jsonl import read_records
    from swerl_cli.training.advantages import select_samples
    from swerl_cli.training.batching import plan_steps
    from swerl_cli.training.dapo_config import DapoConfig
    from swerl_cli.training.data import trajectory_to_sample

    cfg = DapoConfig(batch_size=batch, lr=1e-6)
    sel = select_samples(read_records(str(data)), cfg)
    samples = [trajectory_to_sample(s.loc, None, mask_format_errors=False) for s in sel.samples]
    plans = plan_steps(samples, world_size=1, micro_batch_tokens=cfg.micro_batch_tokens, batch_size=batch, seed=0)
    assert len(plans) == summary["steps"], (len(plans), summary["steps"])
    steps = []
    for plan in plans:
        rows = []
        for i in sorted(i for mb in plan.micro[0] for i in mb):
            smp, n = samples[i], len(sel.samples[i].loc.obj["turns"][0]["prompt_token_ids"])
            rows.append(
                {
                    "prompt": smp.input_ids[:n],
                    "completion": smp.input_ids[n:],
                    "mask": smp.loss_mask[n:],
                    "advantage": sel.samples[i].advantage,
                }
            )
        steps.append(rows)
    path = work / "trl-steps.json"
    path.write_text(json.dumps(steps))
    return path


def _run(cmd: list[str]) -> str:
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    env = {k: v for k, v in env.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT")}
    p = subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        raise RuntimeError(f"bench run failed: {' '.join(cmd[:4])}...\n{p.stderr.decode()[-2000:]}")
    return p.stdout.decode().strip().splitlines()[-1]


def _swerl(data: Path, model_dir: Path, out: Path, old_logprobs: str, batch: int) -> tuple[dict, list[dict]]:
    cmd = [sys.executable, "-m", "swerl_cli", "dapo", str(data), "--model", str(model_dir), "--output", str(out)]
    cmd += ["--batch-size", str(batch), "--no-carry-optimizer", "--old-logprobs", old_logprobs]
    cmd += ["--step-fill", "samples"]  # the sample shuffle _trl_steps replays with plan_steps
    summary = json.loads(_run(cmd))
    return summary, [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]


def main() -> None:
    """Print seconds per update and per optimizer step of both, FLOP/s shares, and the TRL/swerl ratio."""
    from benchmarks.flops import ROUNDS, machine_line, matmul_peak, model_flops
    from benchmarks.models import train_model

    threads = int(os.environ.get("OMP_NUM_THREADS", "2"))
    print(machine_line(threads))
    with tempfile.TemporaryDirectory(prefix="bench-dapo-") as tmp:
        work = Path(tmp)
        model = train_model(work)
        model_dir, (groups, g, batch) = model.path, SIZES[model.real]
        data, lengths = _build(work, model_dir, groups, g)
        peak = matmul_peak(threads)
        flops = model_flops(model_dir, lengths)
        runs: dict[str, list[tuple[float, Any]]] = {"sampler": [], "trainer": [], "trl": []}
        steps_file = None
        for r in range(ROUNDS):  # the three alternate, each keeps its fastest round: load drifts on a shared host
            summary, fast = _swerl(data, model_dir, work / f"sampler-{r}", "sampler", batch)
            runs["sampler"].append((sum(m["step_s"] for m in fast), (summary, fast)))
            summary_t, slow = _swerl(data, model_dir, work / f"trainer-{r}", "trainer", batch)
            secs = sum(m["step_s"] for m in slow) + summary_t["timing"]["old_logprob_pass_s"]
            runs["trainer"].append((secs, (summary_t, slow)))
            steps_file = steps_file or _trl_steps(data, summary, work, batch)
            trl_cmd = [sys.executable, "-c", TRL_SCRIPT, str(model_dir), str(steps_file), str(work / "t"), str(batch)]
            trl_r = json.loads(_run(trl_cmd))
            runs["trl"].append((sum(trl_r["step_s"]), trl_r))
    (s_fast, (summary, fast)), (s_slow, (_, slow)), (s_trl, trl) = (
        min(runs[k], key=lambda x: x[0]) for k in ("sampler", "trainer", "trl")
    )
    n = summary["steps"]
    c_fast = sum(m["step_cpu_s"] for m in fast)
    c_trl = sum(trl["step_cpu_s"])
    print(f"model: {model.label}")
    print(
        f"DAPO update, {groups}x{g} trajectories, {sum(lengths)} tokens ({summary['tokens']} action tokens), {n} "
        f"optimizer steps, CPU fp32, {threads} threads; fp32 matmul peak {peak / 1e9:.1f} GFLOP/s; "
        f"model FLOPs {flops / 1e12:.3f} T"
    )
    print("swerl: packed rows, per-document attention (packed_sdpa), fused logprob head on action tokens, ZeRO-2")
    print(f"TRL:   GRPOTrainer.compute_loss {json.dumps(trl['config'])}, padded prompt/completion batches, sdpa")
    print(f"{'trainer':<36}{'s/update':>10}{'s/step':>9}{'GFLOP/s':>9}{'% peak':>8}{'first loss':>13}")
    rows = [
        ("swerl dapo --old-logprobs sampler", s_fast, fast[0]["loss"]),
        ("swerl dapo --old-logprobs trainer", s_slow, slow[0]["loss"]),
        ("TRL GRPOTrainer loss_type=dapo", s_trl, trl["first_loss"]),
    ]
    for name, secs, first in rows:
        print(
            f"{name:<36}{secs:>10.2f}{secs / n:>9.3f}{flops / secs / 1e9:>9.2f}{100 * flops / secs / peak:>7.1f}%"
            f"{first:>13.5f}"
        )
    print(
        f"ratio TRL / swerl time per update: {s_trl / s_fast:.2f}x (sampler logprobs, no second forward), "
        f"{s_trl / s_slow:.2f}x (with the theta_old pass); target >= 1.5x"
    )
    print(
        f"CPU seconds in the steps (all threads): swerl (sampler) {c_fast:.1f}, TRL {c_trl:.1f}: "
        f"{c_trl / c_fast:.2f}x per CPU second"
    )
