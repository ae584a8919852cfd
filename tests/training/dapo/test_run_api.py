"""`run_dapo(records, cfg)` as a library call: the paths live in the config, checkpoint k's run config is read
once, and the tokenizer is loaded once (the engine gets the one the data was tokenised with)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.records import rollout

pytestmark = [pytest.mark.train, pytest.mark.slow]

SCRIPT = """
import json, sys
from pathlib import Path

import transformers

counts = {"tokenizer_loads": 0, "run_config_reads": 0}
load = transformers.AutoTokenizer.from_pretrained
read_text = Path.read_text


def counting_load(*args, **kwargs):
    counts["tokenizer_loads"] += 1
    return load(*args, **kwargs)


def counting_read(self, *args, **kwargs):
    counts["run_config_reads"] += self.name == "swerl_run_config.json"
    return read_text(self, *args, **kwargs)


transformers.AutoTokenizer.from_pretrained = counting_load
Path.read_text = counting_read

from swerl_cli.streams.jsonl import read_many
from swerl_cli.training.dapo import run_dapo
from swerl_cli.training.dapo_config import DapoConfig

data, model, output = sys.argv[1:4]
cfg = DapoConfig(model=model, output=output, group_size=4, batch_size=4, micro_batch_tokens=64, lr=1e-3)
summary = run_dapo(read_many([data]), cfg)
print(json.dumps({**counts, "summary": summary}))
"""


def _run(data: Path, model: Path, out: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(data), str(model), str(out)], capture_output=True, env=env)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return json.loads(proc.stdout.decode().splitlines()[-1])


def test_run_dapo_takes_its_paths_from_the_config_and_reads_checkpoint_k_once(tiny_model: Path, tmp_path: Path):
    rng = random.Random(3)
    recs = [
        rollout("A", i, resolved=i % 2 == 0, turns=2, token_ids=[[rng.randrange(5, 1500) for _ in range(4)]] * 2)
        for i in range(4)
    ]
    data = tmp_path / "graded.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in recs))
    first = _run(data, tiny_model, tmp_path / "ckpt-1")
    second = _run(data, tmp_path / "ckpt-1", tmp_path / "ckpt-2")
    for run in (first, second):
        assert run["tokenizer_loads"] == 1  # the data's tokenizer is the engine's
        assert run["run_config_reads"] == 1  # checkpoint k's swerl_run_config.json (absent for the tiny model)
    assert first["summary"]["checkpoint"] == str(tmp_path / "ckpt-1")
    assert first["summary"]["metrics_file"] == str(tmp_path / "ckpt-1" / "metrics.jsonl")
    # what the one read of checkpoint 1's run config feeds: the global step and the carried optimizer state
    steps = first["summary"]["steps"]
    assert steps >= 1
    assert second["summary"]["config"]["dapo"]["global_step"] == 2 * steps
    assert second["summary"]["config"]["dapo"]["optimizer_state_carried"] is True
    assert second["summary"]["config"]["model"] == str(tmp_path / "ckpt-1")
