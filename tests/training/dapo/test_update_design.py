"""Issue 41's DAPO update design: whole groups per optimizer step, pi_old from the sampler without the recompute
pass (and `auto`'s choice), and the optimizer's start from the RFT run's AdamW moments (`--init-optimizer`)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from swerl_cli.training.dapo_config import DapoConfig
from swerl_cli.training.dapo_old import resolve_old_logprobs
from swerl_cli.training.data import Sample
from tests.records import rollout
from tests.training.fixtures import launch_swerl

pytestmark = pytest.mark.train


def _groups(n_groups: int = 6, g: int = 8, seed: int = 5) -> list[dict]:
    """n_groups mixed groups of G = 8 (resolved at random, turns varied so penalties differ) and one all-solved."""
    rng = random.Random(seed)
    recs = []
    for k in range(n_groups):
        for i in range(g):
            ids = [[rng.randrange(5, 1500) for _ in range(3 + i % 3)] for _ in range(2)]
            recs.append(rollout(f"T{k}", i, resolved=rng.random() < 0.5 or i == 0, turns=2, token_ids=ids))
    recs += [rollout("ALL", i, resolved=True, turns=1, token_ids=[[9, 10, 11]]) for i in range(g)]
    return recs


def _prepare(tiny_model: Path, tmp: Path, **cfg: object):
    from swerl_cli.cli._paths import training_records
    from swerl_cli.training.dapo import _prepare

    data = tmp / "graded.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _groups()))
    c = DapoConfig(model=str(tiny_model), output=str(tmp / "out"), group_size=8, batch_size=20, **cfg)  # type: ignore[arg-type]
    return _prepare(training_records([str(data)]), c, lambda _m: None)


def _step_sums(prepared) -> list[tuple[float, dict[int, float]]]:
    """Per optimizer step: the sum of its samples' advantages, and that sum per group."""
    out = []
    for plan in prepared.plans:
        idx = [i for rank in plan.micro for mb in rank for i in mb]
        per: dict[int, float] = {}
        for i in idx:
            per[prepared.groups[i]] = per.get(prepared.groups[i], 0.0) + prepared.samples[i].advantage
        out.append((sum(prepared.samples[i].advantage for i in idx), per))
    return out


def test_whole_group_steps_have_zero_advantage_sums(tiny_model: Path, tmp_path: Path) -> None:
    """--step-fill groups (the default): every step's advantages sum to zero, per group and in total, on the plans
    the trainer's own _prepare builds; each group lies in exactly one step, and steps stay within --batch-size."""
    prepared = _prepare(tiny_model, tmp_path)
    assert len(prepared.plans) >= 3
    for total, per in _step_sums(prepared):
        assert total == pytest.approx(0.0, abs=1e-6)
        assert all(v == pytest.approx(0.0, abs=1e-6) for v in per.values())
    steps_of: dict[int, set[int]] = {}
    for n, plan in enumerate(prepared.plans):
        assert plan.n_samples <= 20
        for rank in plan.micro:
            for mb in rank:
                for i in mb:
                    steps_of.setdefault(prepared.groups[i], set()).add(n)
    assert all(len(s) == 1 for s in steps_of.values())
    assert len(steps_of) == 6  # the all-solved group dropped (dynamic sampling)


def test_sample_fill_splits_groups_so_step_sums_drift(tiny_model: Path, tmp_path: Path) -> None:
    """--step-fill samples keeps the old shuffle: some step holds group fragments whose advantages do not cancel."""
    prepared = _prepare(tiny_model, tmp_path, step_fill="samples")
    assert max(abs(total) for total, _ in _step_sums(prepared)) > 0.1


def _sample(has: bool) -> Sample:
    return Sample("s", "t", 1, [1, 2, 3], [0, 1, 1], [0.0, -1.0, -1.0], has)


def test_auto_old_logprobs_takes_the_sampler_only_when_the_logged_gap_allows() -> None:
    auto = DapoConfig(old_logprobs="auto", old_logprobs_max_gap=1e-3)
    ok = [_sample(True), _sample(True)]
    assert resolve_old_logprobs(auto, ok, 6e-6)[0] == "sampler"
    assert resolve_old_logprobs(auto, ok, 2e-3)[0] == "trainer"  # gap above the threshold
    assert resolve_old_logprobs(auto, ok, None)[0] == "trainer"  # first update: nothing logged, it measures
    assert resolve_old_logprobs(auto, [_sample(True), _sample(False)], 6e-6)[0] == "trainer"  # a turn lacks them
    assert resolve_old_logprobs(DapoConfig(old_logprobs="auto", loss="tis"), ok, 6e-6)[0] == "trainer"
    assert resolve_old_logprobs(DapoConfig(old_logprobs="trainer"), ok, 6e-6)[0] == "trainer"


SAMPLER_PROBE = r"""
import json, sys
from dataclasses import replace
from pathlib import Path
from swerl_cli.cli._paths import training_records
from swerl_cli.training.dapo import _prepare, _train
from swerl_cli.training.dapo_config import DapoConfig
from swerl_cli.training.engine import TrainEngine
from swerl_cli.training.loop import MetricsLog
model, data, tmp = sys.argv[1], sys.argv[2], Path(sys.argv[3])
out, recomputed = {}, None
for mode in ("trainer", "sampler"):
    cfg = DapoConfig(model=model, output=str(tmp / mode), group_size=8, batch_size=20, micro_batch_tokens=64,
                     lr=1e-2, weight_decay=0.0, seed=3, zero_stage=0, old_logprobs=mode)
    prepared = _prepare(training_records([data]), cfg, lambda _m: None)
    if recomputed is not None:  # the sampler's logprobs: what a sampler exact to the trainer's numbers records
        for s, lp in zip(prepared.samples, recomputed, strict=True):
            s.logprobs = list(lp)
    eng = TrainEngine.from_config(cfg, total_steps=len(prepared.plans), tokenizer=prepared.tokenizer)
    calls = []
    forward = eng.forward_logprobs
    eng.forward_logprobs = lambda b, f=forward: (calls.append(1), f(b))[1]
    log = MetricsLog(tmp / f"{mode}.jsonl", kind="dapo")
    steps, _ = _train(eng, prepared, cfg, log, {}, lambda _m: None)
    log.close()
    recomputed = [list(s.logprobs) for s in prepared.samples]
    rows = [json.loads(x) for x in (tmp / f"{mode}.jsonl").read_text().splitlines() if '"step"' in x]
    out[mode] = {"forwards": len(calls), "micro": sum(p.n_micro for p in prepared.plans),
                 "loss": [r["loss"] for r in rows if "loss" in r], "gap": steps.mean_diff()}
print(json.dumps(out))
"""


def test_sampler_logprobs_give_the_recomputed_loss_without_the_recompute_pass(tiny_model: Path, tmp_path: Path) -> None:
    """With sampler logprobs equal to the trainer's (an fp32 sampler), --old-logprobs sampler trains on the same
    losses as trainer within the measured gap, and runs one forward per micro-batch instead of two."""
    data = tmp_path / "graded.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _groups()))
    proc = subprocess.run(
        [sys.executable, "-c", SAMPLER_PROBE, str(tiny_model), str(data), str(tmp_path)],
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    got = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    tr, sa = got["trainer"], got["sampler"]
    assert tr["forwards"] == 2 * tr["micro"]  # theta_old pass + the training forwards
    assert sa["forwards"] == sa["micro"]  # the recompute pass skipped
    assert sa["gap"] is not None
    assert sa["gap"] < 1e-5  # measured on step 1's forward, under theta_old
    assert len(sa["loss"]) == len(tr["loss"]) >= 2
    assert sa["loss"] == pytest.approx(tr["loss"], abs=1e-5 + 10 * sa["gap"])


def _weights(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


@pytest.mark.slow
def test_init_optimizer_starts_from_the_rft_moments_and_keeps_checkpoint_k(tiny_model: Path, tmp_path: Path) -> None:
    """rft --save-optimizer writes OUTPUT/optimizer_state; dapo --init-optimizer takes its moments (the update
    differs from a fresh AdamW's) while the weights it starts from stay --model's, not the RFT checkpoint's."""
    from transformers import AutoTokenizer

    from tests.training.fixtures import make_trajectory, write_jsonl

    tok = AutoTokenizer.from_pretrained(tiny_model)
    sft = write_jsonl(tmp_path / "sft.jsonl", [make_trajectory(tok, i) for i in range(8)])
    rft = tmp_path / "rft"
    launch_swerl(["rft", str(sft), "--model", str(tiny_model), "--output", str(rft), "--lr", "1e-2",
                  "--warmup-steps", "0", "--batch-size", "2", "--save-optimizer"], 1)  # fmt: skip
    assert (rft / "optimizer_state" / "latest").is_file()
    data = tmp_path / "graded.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _groups(2)))
    common = ["--model", str(tiny_model), "--group-size", "8", "--batch-size", "16", "--lr", "1e-3",
              "--micro-batch-tokens", "64", "--seed", "3"]  # fmt: skip
    runs = {}
    for name, extra in (("fresh", []), ("init", ["--init-optimizer", str(rft)])):
        proc = launch_swerl(["dapo", str(data), "--output", str(tmp_path / name), *common, *extra], 1)
        runs[name] = json.loads(proc.stdout.decode())
    assert runs["fresh"]["config"]["dapo"]["optimizer_start"] == "fresh"
    assert runs["init"]["config"]["dapo"]["optimizer_start"] == "init"
    base, moved = _weights(tiny_model), _weights(rft)
    fresh, init = _weights(tmp_path / "fresh"), _weights(tmp_path / "init")

    def dist(a: dict, b: dict) -> float:
        return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)

    assert dist(init, fresh) > 1e-6  # the carried moments change the step
    assert dist(init, base) < dist(moved, base) / 2  # started from --model's weights, not the RFT checkpoint's
