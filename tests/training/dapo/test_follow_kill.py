"""`swerl dapo --follow` killed with SIGKILL at random moments and restarted: every graded record is trained exactly
once (in one committed update), the checkpoints form one lineage, and the global step counts each update once."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.records import rollout

pytestmark = [pytest.mark.train, pytest.mark.slow]

GROUPS = 4
FLAGS = ("--group-size", "2", "--batch-size", "4", "--lr", "1e-2", "--micro-batch-tokens", "64", "--seed", "3")


def _graded(path: Path) -> list[str]:
    rng = random.Random(7)

    def ids(n: int) -> list[int]:
        return [rng.randrange(5, 1500) for _ in range(n)]

    recs = [
        rollout(f"T{g}", i, resolved=i == 0, turns=2, prompt=ids(9), token_ids=[ids(3 + i), ids(4)])
        for g in range(GROUPS)
        for i in range(2)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return [r["id"] for r in recs]


def _start(graded: Path, model: Path, run: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "swerl_cli", "dapo", "--follow", str(graded), "--model", str(model)]
    cmd += ["--output", str(run), "--idle-timeout", "2", "--max-staleness", "100", *FLAGS]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=os.environ.copy())


def test_kill_9_at_random_points_loses_nothing_and_trains_nothing_twice(tiny_model, tmp_path):
    graded, run = tmp_path / "graded.jsonl", tmp_path / "run"
    all_ids = _graded(graded)
    rng = random.Random(int(time.time()))
    kills: list[float] = []
    for _ in range(3):
        proc = _start(graded, tiny_model, run)
        at = rng.uniform(2.0, 30.0)
        try:
            proc.wait(timeout=at)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills.append(round(at, 1))
    proc = _start(graded, tiny_model, run)
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, f"kills at {kills}"
    state = json.loads((run / "follow_state.json").read_text())
    assert state["updates"] == GROUPS, kills
    trained = [
        json.loads(x)["id"]
        for n in range(GROUPS)
        for x in (run / f"iter-{n}" / "graded.jsonl").read_text().splitlines()
    ]
    assert sorted(trained) == sorted(all_ids), f"lost or doubled records (kills at {kills})"
    assert sorted(state["consumed"]) == sorted(all_ids)
    assert state["global_step"] == GROUPS  # one optimizer step per update, each counted once
    model = str(tiny_model.resolve())
    for n in range(GROUPS):
        cfg = json.loads((run / f"iter-{n + 1}" / "ckpt" / "swerl_run_config.json").read_text())
        assert cfg["model"] == model, f"update {n} did not start from the previous checkpoint (kills at {kills})"
        assert cfg["dapo"]["global_step"] == n + 1
        model = str((run / f"iter-{n + 1}" / "ckpt").resolve())
        assert json.loads((run / f"iter-{n}" / "dapo.json").read_text())["follow"]["update"] == n
    assert not list(run.glob(f"iter-{GROUPS + 1}"))
    assert not list(run.rglob("*.partial")), "an uncommitted checkpoint was left behind"
