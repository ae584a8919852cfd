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
