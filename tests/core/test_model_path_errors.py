"""A --model that looks like a path but does not exist is one clear line, before any work starts."""

from __future__ import annotations

import pytest

from tests.conftest import EXAMPLES, run_swerl

pytestmark = pytest.mark.train


def test_collect_hf_with_missing_model_dir_exits_3_before_any_episode(tmp_path):
    proc = run_swerl("collect", "--policy", "hf", "--model", str(tmp_path / "nope"), str(EXAMPLES / "tasks.jsonl"))
    assert proc.returncode == 3
    assert proc.stdout == b""  # no error records: the run never started
    lines = proc.stderr.decode().strip().splitlines()
    assert lines == [
        f"swerl collect: --model {tmp_path / 'nope'}: no such model directory "
        "(expected a save_pretrained dir or a hub name)"
    ]


def test_rft_with_missing_model_dir_is_one_line(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("")
    proc = run_swerl("rft", "--model", str(tmp_path / "nope"), "-o", str(tmp_path / "out"), str(data))
    assert proc.returncode == 3
    err = [ln for ln in proc.stderr.decode().splitlines() if not ln.startswith("[")]  # drop DeepSpeed's warning
    assert err[-1].startswith(f"swerl rft: --model {tmp_path / 'nope'}: no such model directory")
    assert "Traceback" not in proc.stderr.decode()
    assert not (tmp_path / "out").exists()
