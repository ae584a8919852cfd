"""A torch JIT-extension build lock left by a killed process no longer hangs later runs: swerl removes a lock no live
process holds (training/dist.py) and leaves one a live process holds. Before, `test_follow_kill`'s SIGKILL during
DeepSpeed's shm_comm load left the lock and every later rft/dapo in the session waited on it forever."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from swerl_cli.training import dist
from tests.conftest import run_swerl
from tests.training.fixtures import make_trajectory, write_jsonl

HOLD = "import os, sys, time; os.open(sys.argv[1], os.O_CREAT | os.O_EXCL); print('held', flush=True); time.sleep(60)"


def _holder(lock: Path) -> subprocess.Popen:
    """A live process holding `lock` the way torch's FileBaton does (created with O_EXCL, kept open)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_only_locks_no_live_process_holds_are_stale(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    left = tmp_path / "py311_cpu" / "left_op" / "lock"  # the default layout: ROOT/<python_device>/<name>/lock
    left.parent.mkdir(parents=True)
    left.touch()
    held = tmp_path / "held_op" / "lock"  # TORCH_EXTENSIONS_DIR's layout: ROOT/<name>/lock
    held.parent.mkdir()
    proc = _holder(held)
    try:
        assert dist.stale_build_locks(tmp_path, settle_s=0.05) == [left]
        assert dist.stale_build_locks(tmp_path, ("held_op",), settle_s=0.05) == []
        assert dist.clear_stale_build_locks(tmp_path, ("left_op", "held_op")) == [left]
        assert not left.exists()
        assert held.exists()
        assert f"swerl: removed {left}: a build lock no running process holds" in capsys.readouterr().err
    finally:
        proc.kill()
        proc.communicate()
    assert dist.stale_build_locks(tmp_path, settle_s=0.05) == [held]  # its holder was killed: now it is stale
    assert dist.clear_stale_build_locks(tmp_path) == []  # by default only the shm_comm op's lock is touched
    assert held.exists()
    assert dist.stale_build_locks(tmp_path / "nothing-built-here") == []


@pytest.mark.train
def test_rft_starts_after_a_killed_run_left_the_shm_op_lock(tiny_model: Path, tmp_path: Path):
    from transformers import AutoTokenizer

    built = sorted(Path(dist._extensions_root()).glob("*/deepspeed_shm_comm/*.so"))
    if not built:
        pytest.skip("DeepSpeed's shm_comm op is not built (make setup builds it: make ds-ops)")
    # A private copy of the built op (TORCH_EXTENSIONS_DIR's layout: ROOT/<name>/), which loads without a rebuild:
    # the lock planted there is this test's alone, whatever other processes of the suite load meanwhile.
    root = tmp_path / "torch-extensions"
    shutil.copytree(built[0].parent, root / "deepspeed_shm_comm", ignore=shutil.ignore_patterns("lock"))
    lock = root / "deepspeed_shm_comm" / "lock"
    tok = AutoTokenizer.from_pretrained(tiny_model)
    data = write_jsonl(tmp_path / "runs.jsonl", [make_trajectory(tok, 0), make_trajectory(tok, 1)])
    lock.touch()  # what a SIGKILL between FileBaton's acquire and release leaves
    res = run_swerl(
        "rft", str(data), "--model", str(tiny_model), "--output", str(tmp_path / "out"), "--batch-size", "2",
        env={"TORCH_EXTENSIONS_DIR": str(root)}, timeout=300,
    )  # fmt: skip
    err = res.stderr.decode()
    assert res.returncode == 0, err[-2000:]
    assert f"swerl: removed {lock}: a build lock no running process holds" in err
    assert not lock.exists()
    assert "Building extension" not in err  # the copy was used as it is, not rebuilt
    assert (tmp_path / "out" / "config.json").exists()
