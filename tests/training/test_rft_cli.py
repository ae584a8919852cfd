"""`swerl rft` as users run it: one-line bad-input errors, and gold collect -> rft -> hf collect on example tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_swerl
from tests.training.fixtures import make_trajectory, write_jsonl

pytestmark = pytest.mark.train


def test_rft_bad_record_is_one_stderr_line_exit_3(tiny_model: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    good, bad = make_trajectory(tok, 0), make_trajectory(tok, 1)
    bad["turns"][1]["logprobs"] = [0.1]
    data = write_jsonl(tmp_path / "runs.jsonl", [good, bad])
    res = run_swerl("rft", str(data), "--model", str(tiny_model), "--output", str(tmp_path / "out"), timeout=300)
    err = res.stderr.decode().strip().splitlines()
    assert res.returncode == 3
    assert res.stdout == b""
    assert err[-1].startswith(f"swerl rft: {data}:2: field 'turns[1].logprobs': length 1 != token_ids length")
    assert "Traceback" not in res.stderr.decode()
    assert not (tmp_path / "out" / "model.safetensors").exists()


@pytest.mark.docker
@pytest.mark.slow
def test_rft_on_gold_trajectories_gives_a_checkpoint_hf_collect_runs(tiny_model: Path, tmp_path: Path) -> None:
    tasks = EXAMPLES / "tasks.jsonl"
    gold = tmp_path / "gold.jsonl"
    res = run_swerl("collect", str(tasks), "--policy", "gold", "--concurrency", "4", "-o", str(gold), timeout=600)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    ckpt = tmp_path / "ckpt"
    res = run_swerl(
        "rft",
        str(gold),
        "--model",
        str(tiny_model),
        "--output",
        str(ckpt),
        "--batch-size",
        "4",
        "--max-seq-len",
        "16384",
        "--too-long",
        "truncate",
        "--lr",
        "1e-3",
        timeout=600,
    )
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    summary = json.loads(res.stdout)
    assert summary["data"]["rerendered"] == summary["data"]["samples"] > 0  # gold records carry no token ids
    assert summary["checkpoint"] == str(ckpt)
    assert (ckpt / "swerl_run_config.json").is_file()
    one = tmp_path / "one-task.jsonl"
    one.write_text(tasks.read_text().splitlines()[0] + "\n")
    out = tmp_path / "hf.jsonl"
    res = run_swerl(
        "collect",
        str(one),
        "--policy",
        "hf",
        "--model",
        str(ckpt),
        "--max-turns",
        "2",
        "--max-new-tokens",
        "16",
        "-o",
        str(out),
        timeout=600,
    )
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    (rec,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert rec["exit_status"] != "error", rec.get("error")
    assert rec["policy"]["model"] == str(ckpt)
    assert len(rec["turns"][0]["token_ids"]) > 0
