"""The RL loop's make targets: stage variable sets reach the commands, and the stage-2 pool keeps exactly the tasks
solved in (0, 2/3) over the whole run history."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.records import rollout


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-C", str(ROOT), "--no-print-directory", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("stage", "expect"),
    [
        ("1", ["--max-turns 40", "--t-max 40", "--eps-high 0.3", "--batch-size 128", "--max-context-tokens 65536"]),
        (
            "2",
            [
                "--max-turns 80",
                "--t-max 80",
                "--eps-high 0.26",
                "--batch-size 256",
                "--max-context-tokens 131072",
                "stage2-pool.jsonl",
            ],
        ),
    ],
)
def test_rl_iter_stage_variables_reach_the_commands(tmp_path, stage, expect):
    (tmp_path / "iter-3" / "ckpt").mkdir(parents=True)
    (tmp_path / "iter-3" / "ckpt" / "config.json").write_text("{}")
    proc = _make("-n", "rl-iter", "K=3", f"STAGE={stage}", f"RUNS={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for flag in expect:
        assert flag in out
    assert f"--model {tmp_path}/iter-3/ckpt --output {tmp_path}/iter-4/ckpt" in out  # checkpoint k -> k+1
    assert "--run iter-3" in out


def test_rl_iter_zero_starts_from_model(tmp_path):
    proc = _make("-n", "rl-iter", "K=0", "MODEL=some/model", f"RUNS={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    assert "--model some/model --output" in proc.stdout


def test_stage2_pool_drops_easy_and_never_solved_tasks(tmp_path: Path):
    rates = {"easy": [1, 1, 1], "never": [0, 0, 0], "mid": [1, 0, 0], "twothirds": [1, 1, 0], "late": [0, 0, 1]}
    for k in range(2):  # two iterations: the rate is taken over both (history), not per iteration
        d = tmp_path / f"iter-{k}"
        d.mkdir()
        lines = []
        for iid, res in rates.items():
            res = res if k == 0 else ([0, 0, 0] if iid == "late" else res)
            for i, r in enumerate(res):
                rec = rollout(iid, i, run=f"iter-{k}", resolved=bool(r))
                rec["task"] = {"schema": "swerl.task/1", "instance_id": iid}
                lines.append(json.dumps(rec))
        (d / "graded.jsonl").write_text("\n".join(lines) + "\n")
    proc = _make("rl-stage2-pool", f"RUNS={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    pool = [json.loads(x) for x in (tmp_path / "stage2-pool.jsonl").read_text().splitlines()]
    assert sorted(t["instance_id"] for t in pool) == ["late", "mid"]  # late: 1/6 over the history
    assert all(t["schema"] == "swerl.task/1" for t in pool)


def test_rl_iter_zero_evaluates_the_starting_model_before_its_rollouts(tmp_path):
    proc = _make("-n", "rl-iter", "K=0", "MODEL=some/model", f"RUNS={tmp_path}", "SEED=3", "EVAL_SAMPLES=4")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    base = out.index("--model some/model --samples 4 --run eval-0")  # checkpoint 0's eval -> iter-0/eval.json
    assert base < out.index("--run iter-0") < out.index("--run eval-1")
    assert out.count("--seed $(( 3 * 100000 + 99000 ))") == 2  # both evals draw the same samples
    assert f"{tmp_path}/iter-0/eval.json" in out
    assert "--seed 3 " in out[out.index(" dapo ") :]  # the update's step split follows SEED too
    off = _make("-n", "rl-iter", "K=0", "MODEL=some/model", f"RUNS={tmp_path}", "EVAL=0")
    assert off.returncode == 0, off.stderr
    assert off.stdout.count('if [ "0" = "0" ]') == 2  # EVAL=0: both evals are skipped when run


def test_rl_status_lines_and_the_eval_change_in_standard_errors(tmp_path: Path):
    def dapo(reward: float, steps: int) -> str:
        return json.dumps(
            {"reward_mean": reward, "resolved_rate": reward, "steps": steps, "counts": {"samples_kept": 16}}
        )

    def ev(mean: float, sem: float) -> str:
        return json.dumps({"pass@1": {"mean": mean, "sem": sem, "n": 16}})

    for k, files in enumerate(
        [
            {"dapo.json": dapo(0.25, 1), "eval.json": ev(0.25, 0.1)},
            {"dapo.json": dapo(0.5, 1), "eval.json": ev(0.5, 0.12)},
            {"eval.json": ev(0.75, 0.1)},
        ]
    ):
        (tmp_path / f"iter-{k}").mkdir()
        for name, text in files.items():
            (tmp_path / f"iter-{k}" / name).write_text(text)
    proc = _make("rl-status", f"RUNS={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "iter-0: rollouts mean_reward=0.250 resolved=0.250 steps=1 kept=16 | eval of checkpoint 0: pass@1 0.250 ± "
        "0.100 (n=16)",
        "iter-1: rollouts mean_reward=0.500 resolved=0.500 steps=1 kept=16 | eval of checkpoint 1: pass@1 0.500 ± "
        "0.120 (n=16)",
        "iter-2: eval of checkpoint 2: pass@1 0.750 ± 0.100 (n=16)",
        # (0.75 - 0.25) / sqrt(0.1^2 + 0.1^2) = 3.54
        "RL: eval pass@1 0.25 ± 0.10 (checkpoint 0) -> 0.75 ± 0.10 (checkpoint 2) over 2 iterations: +0.50, +3.5 "
        "standard errors",
    ]
