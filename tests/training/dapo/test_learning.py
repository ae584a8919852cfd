"""Learning test: the real RL loop (`make rl`: collect with the `hf` policy in Docker sandboxes | grade -> swerl dapo)
raises the toy task's resolve rate well above its start.

Design (a random tiny model never writes a parsable ```command block, so RL alone has nothing to reinforce):
1. probe: one real `swerl collect` episode gives the exact prompt token ids of the toy task (short prompt file);
2. RFT warm-up with `swerl rft`, as in the paper (the demo's recipe, scripts/toy_warmup.py): the model learns to
   answer with one of four command blocks, one of which (`sed -i '/upper/d' greet/core.py`) fixes the task, so
   about a quarter of the rollouts succeed;
3. ITERS iterations of `make rl` with the demo's settings (G=16 samples of the one task, 1 turn, one update per
   iteration on the whole group, lr 1e-2 with examples/toy-dapo.yaml's Adam epsilon) must lift the resolve rate
   of the rollouts clearly. With LR = 1e-9 (no learning) the assertions fail.
Seeds are fixed (collect --seed per iteration, rft/dapo --seed) and dapo orders its samples canonically, so the
run is reproducible on this machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT, run_swerl

pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.train]

PROMPTS = EXAMPLES / "toy-prompts.yaml"
ITERS = 4
LR = "1e-2"


def _resolve_rate(path: Path) -> float:
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    return sum(r["grade"]["resolved"] for r in recs) / len(recs)


def warm_start(tiny_model: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The toy task file and the RFT-warmed checkpoint every learning test starts from (steps 1-2 above)."""
    if not (ROOT / ".venv" / "bin" / "swerl").exists():
        pytest.skip("make rl runs .venv/bin/swerl; run `make venv`")
    task = (EXAMPLES / "toy-tasks.jsonl").read_text().splitlines()[0]
    image = json.loads(task)["image"]
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode != 0:
        pytest.fail(f"toy task image {image} is missing: run `make example-images`")
    tasks = tmp_path / "toy.jsonl"
    tasks.write_text(task + "\n")
    probe = run_swerl(
        "collect",
        "--policy",
        "hf",
        "--model",
        str(tiny_model),
        "--samples",
        "1",
        "--max-turns",
        "1",
        "--max-new-tokens",
        "2",
        "--prompt-config",
        str(PROMPTS),
        str(tasks),
    )
    assert probe.returncode == 0, probe.stderr.decode()[-2000:]
    probe_file = tmp_path / "probe.jsonl"
    probe_file.write_bytes(probe.stdout)
    warm_data = tmp_path / "warm.jsonl"
    script = [sys.executable, str(ROOT / "scripts" / "toy_warmup.py"), str(tiny_model), str(probe_file), str(warm_data)]
    made = subprocess.run(script, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr[-2000:]
    warm = tmp_path / "warm-ckpt"
    rft = run_swerl(
        "rft",
        str(warm_data),
        "--model",
        str(tiny_model),
        "--output",
        str(warm),
        "--lr",
        "3e-3",
        "--lr-schedule",
        "constant",
        "--warmup-steps",
        "0",
        "--epochs",
        "120",
        "--batch-size",
        "4",
    )
    assert rft.returncode == 0, rft.stderr.decode()[-2000:]
    return warm, tasks


def test_rl_loop_raises_reward_on_toy_task(tiny_model: Path, tmp_path: Path):
    warm, tasks = warm_start(tiny_model, tmp_path)
    runs = tmp_path / "runs"
    make = [
        "make",
        "-C",
        str(ROOT),
        "--no-print-directory",
        "rl",
        f"ITERS={ITERS}",
        f"RUNS={runs}",
        f"MODEL={warm}",
        f"TASKS={tasks}",
        "G=16",
        "BATCH=16",
        f"LR={LR}",
        "MAX_TURNS=1",
        "CONTEXT=4096",
        "MAX_NEW_TOKENS=32",
        "EVAL=0",
        "CONCURRENCY=4",
        f"COLLECT_ARGS=--prompt-config {PROMPTS}",
        f"DAPO_ARGS=--config {EXAMPLES / 'toy-dapo.yaml'}",
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT")}
    proc = subprocess.run(make, capture_output=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]

    rates = [_resolve_rate(runs / f"iter-{k}" / "graded.jsonl") for k in range(ITERS)]
    print("resolve rate of the rollouts per iteration:", rates, file=sys.stderr)
    summaries = [json.loads((runs / f"iter-{k}" / "dapo.json").read_text()) for k in range(ITERS)]
    assert [s["resolved_rate"] for s in summaries] == pytest.approx(rates)
    assert all(s["counts"]["samples"] == 16 for s in summaries)
    # The hf sampler's logprobs are the trainer's (fp32, temperature 1, no truncation): the guard rail stays quiet.
    assert all((s["logprob_diff"] or 0.0) < 1e-4 and s["warning"] is None for s in summaries)
    assert all(s["config"]["dapo"]["optimizer_state_carried"] for s in summaries[1:])
    assert (runs / f"iter-{ITERS}" / "ckpt" / "config.json").is_file()
    start, end = rates[0], sum(rates[-2:]) / 2
    assert 0.0 < start <= 0.4, rates  # the warm-up leaves room to learn
    assert end >= start + 0.25, rates  # clearly above its start
    assert rates[-1] > start, rates

    # Resumable: every output exists, so a second `make rl` does no work and changes nothing.
    before = {p: p.stat().st_mtime_ns for p in runs.rglob("*") if p.is_file()}
    again = subprocess.run(make, capture_output=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    assert b"skipping" in again.stdout
    assert {p: p.stat().st_mtime_ns for p in runs.rglob("*") if p.is_file()} == before
