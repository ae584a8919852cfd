"""`swerl rft` as users run it: one-line bad-input errors, and gold collect -> rft -> hf collect on example tasks."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from swerl_cli.core.errors import ConfigError
from tests.conftest import EXAMPLES, run_swerl
from tests.training.fixtures import make_trajectory, write_jsonl
from tests.training.tb import read_scalars

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
        "--tensorboard",
        str(tmp_path / "tb"),
        timeout=600,
    )
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    summary = json.loads(res.stdout)
    assert summary["data"]["rerendered"] == summary["data"]["samples"] > 0  # gold records carry no token ids
    assert summary["checkpoint"] == str(ckpt)
    assert (ckpt / "swerl_run_config.json").is_file()
    # The TensorBoard events hold every numeric metrics.jsonl field under its own name, at its step.
    rows = [json.loads(x) for x in (ckpt / "metrics.jsonl").read_text().splitlines()]
    events = read_scalars(tmp_path / "tb")
    assert set(events) == {k for k, v in rows[0].items() if k != "step" and isinstance(v, (int, float))}
    assert events["loss"] == [(r["step"], pytest.approx(r["loss"], rel=1e-5)) for r in rows]
    assert [s for s, _ in events["trainable_tokens"]] == list(range(1, summary["steps"] + 1))
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


def test_wandb_missing_is_one_line_with_the_install_command(tmp_path: Path) -> None:
    from swerl_cli.training.trackers import Trackers, TrackerSpec

    if importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed here")
    with pytest.raises(ConfigError, match=r"--wandb needs the wandb package: pip install wandb"):
        Trackers(TrackerSpec(tensorboard=str(tmp_path / "tb"), wandb=True))


@pytest.mark.parametrize("kind", ["rft", "dapo"])
@pytest.mark.parametrize("slash", ["/", ""])
def test_metrics_into_a_directory_is_refused_before_training(tmp_path: Path, kind: str, slash: str) -> None:
    """`--metrics DIR/` wrote a file named DIR (the slash dropped) and exited 0; an existing DIR failed only once
    training was done. Now exit 2 before the model is even looked at (`m` is never loaded)."""
    data = tmp_path / "in.jsonl"
    data.write_text("")
    metrics = tmp_path / "m"
    if not slash:
        metrics.mkdir()
    res = run_swerl(kind, str(data), "--model", "m", "--output", str(tmp_path / "ck"), "--metrics", f"{metrics}{slash}")
    assert (res.returncode, res.stdout) == (2, b"")
    assert res.stderr.decode().splitlines() == [
        f"swerl {kind}: --metrics {metrics}{slash}: is a directory; give a file name"
    ]
    assert metrics.is_dir() if not slash else not metrics.exists()
    assert not (tmp_path / "ck").exists()
