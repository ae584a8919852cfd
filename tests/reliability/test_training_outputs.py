"""Issue 21: the training commands keep the output contract. A checkpoint directory is complete or absent (written
to OUTPUT.partial, renamed into place); -o a file or a foreign directory is refused; unwritable outputs and a full
--metrics are one line. Real tiny model, real DeepSpeed, real signals."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_swerl
from tests.training.fixtures import make_trajectory, write_jsonl

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def data(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    return write_jsonl(tmp_path_factory.mktemp("rft-data") / "runs.jsonl", [make_trajectory(tok, i) for i in range(24)])


def _rft(data: Path, model: Path, out: Path, *extra: str) -> list[str]:
    return ["rft", str(data), "--model", str(model), "-o", str(out), "--batch-size", "1", *extra]


def _last_line(res: subprocess.CompletedProcess[bytes], command: str = "rft") -> str:
    err = res.stderr.decode()
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"swerl {command}: "), err
    return last


def test_rft_output_that_is_a_file_is_refused(data: Path, tiny_model: Path, tmp_path: Path) -> None:
    """`rft -o FILE` was a FileExistsError traceback (after loading the model)."""
    f = tmp_path / "notes.txt"
    f.write_text("mine")
    res = run_swerl(*_rft(data, tiny_model, f))
    assert res.returncode == 2
    assert "is a file, not a checkpoint directory" in _last_line(res)
    assert f.read_text() == "mine"


def test_rft_refuses_a_foreign_non_empty_directory(data: Path, tiny_model: Path, tmp_path: Path) -> None:
    """rft wrote its checkpoint into any directory; like dapo it now needs --overwrite for a foreign one."""
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "ch1.tex").write_text("years of work")
    res = run_swerl(*_rft(data, tiny_model, mine))
    assert res.returncode == 2
    assert "not a swerl checkpoint" in _last_line(res)
    assert "--overwrite" in _last_line(res)
    assert [p.name for p in mine.iterdir()] == ["ch1.tex"]


@pytest.mark.parametrize(("where", "code"), [("/sys/swerl-ck", 1), ("/proc/swerl-ck", 1)])
def test_rft_unwritable_output_is_one_line(data: Path, tiny_model: Path, where: str, code: int) -> None:
    """sysfs and procfs refuse new directories even to root (a read-only place a root test can use honestly)."""
    res = run_swerl(*_rft(data, tiny_model, Path(where)))
    assert res.returncode == code
    assert _last_line(res).startswith(f"swerl rft: --output {where}: cannot write the checkpoint: ")


def test_rft_metrics_on_a_full_disk_is_one_line(data: Path, tiny_model: Path, tmp_path: Path) -> None:
    """`--metrics /dev/full` was an OSError traceback; no checkpoint is published."""
    res = run_swerl(*_rft(data, tiny_model, tmp_path / "ck", "--metrics", "/dev/full"), timeout=300)
    assert res.returncode == 1
    assert _last_line(res) == "swerl rft: --metrics /dev/full: cannot write: No space left on device"
    assert not (tmp_path / "ck").exists()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_interrupted_rerun_keeps_the_old_checkpoint_whole(data: Path, tiny_model: Path, tmp_path: Path) -> None:
    """An interrupted re-run left the old weights beside the new run's metrics (rft wrote in place). Now the
    re-run writes OUTPUT.partial; OUTPUT keeps the first run's weights and metrics until a run completes, and
    `--resume` continues the interrupted run from its OUTPUT.partial."""
    ck = tmp_path / "ck"
    res = run_swerl(*_rft(data, tiny_model, ck, "--max-steps", "2"), timeout=300)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    weights, metrics = _digest(ck / "model.safetensors"), (ck / "metrics.jsonl").read_bytes()
    assert len(metrics.splitlines()) == 2
    partial = tmp_path / "ck.partial"
    assert not partial.exists()

    rerun = _rft(data, tiny_model, ck, "--lr", "1e-3", "--save-every", "1")
    proc = subprocess.Popen([sys.executable, "-m", "swerl_cli", *rerun, "--max-steps", "20"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if (partial / "ds_checkpoints" / "latest").is_file() and (partial / "metrics.jsonl").read_bytes():
            break
        time.sleep(0.1)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(120)
    assert proc.returncode == 128 + signal.SIGTERM
    assert _digest(ck / "model.safetensors") == weights
    assert (ck / "metrics.jsonl").read_bytes() == metrics  # not the interrupted run's lines
    assert (partial / "metrics.jsonl").read_bytes()  # the interrupted run's work is beside it, not in it

    res = run_swerl(*rerun, "--max-steps", "4", "--resume", timeout=300)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    summary = json.loads(res.stdout)
    assert summary["resumed_from"] >= 1  # continued the interrupted run's partial checkpoint
    assert not partial.exists()
    # the interrupted run may have saved step 5 before SIGTERM landed (a loaded machine): resuming finishes there
    last = max(4, summary["resumed_from"])
    assert [json.loads(x)["step"] for x in (ck / "metrics.jsonl").read_bytes().splitlines()] == list(range(1, last + 1))
    assert _digest(ck / "model.safetensors") != weights
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]  # no .ck.old-PID left


def test_resume_survives_a_torn_latest_file(data: Path, tiny_model: Path, tmp_path: Path) -> None:
    """A SIGTERM between DeepSpeed's open('latest', 'w') and its write left `latest` empty (seen in a whole-suite
    run: --resume died on DeepSpeed's `assert len(self.ckpt_list) > 0`). swerl now writes `latest` by rename
    after every rank saved, and --resume reads a torn one (as older versions left it) as the newest complete
    step-N."""
    ck = tmp_path / "ck"
    res = run_swerl(*_rft(data, tiny_model, ck, "--max-steps", "3", "--save-every", "1"), timeout=300)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    ds = ck / "ds_checkpoints"
    assert (ds / "latest").read_text() == "step-3"
    assert sorted(p.name for p in ds.glob("[ls]*")) == ["latest", "step-2", "step-3"]  # keep 2, no latest.tmp left
    (ds / "latest").write_text("")
    res = run_swerl(*_rft(data, tiny_model, ck, "--max-steps", "4", "--resume"), timeout=300)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    assert json.loads(res.stdout)["resumed_from"] == 3
    assert [json.loads(x)["step"] for x in (ck / "metrics.jsonl").read_bytes().splitlines()] == [1, 2, 3, 4]
