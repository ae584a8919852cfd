"""The summary of `swerl rft` / `swerl dapo` (issue 43): on a terminal it is a readable table, not raw JSON cut
mid-key; into a pipe it stays one JSON record; and a closed stdout (`>&-`) is refused before any training, where
before the run trained and published its checkpoint, then exited 2 losing the summary."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.records import rollout
from tests.reliability.test_hostile_io import SWERL, _sh
from tests.training.fixtures import make_trajectory, write_jsonl

pytestmark = pytest.mark.train


def _data(kind: str, tiny_model: Path, tmp_path: Path) -> Path:
    if kind == "rft":
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(tiny_model)
        return write_jsonl(tmp_path / "runs.jsonl", [make_trajectory(tok, i) for i in range(2)])
    records = [rollout("A", 0, resolved=True), rollout("A", 1), rollout("A", 2, resolved=True), rollout("A", 3)]
    return write_jsonl(tmp_path / "graded.jsonl", records)


def _args(kind: str, data: Path, tiny_model: Path, out: Path) -> list[str]:
    extra = ["--batch-size", "2"] if kind == "rft" else ["--group-size", "4", "--batch-size", "4"]
    return [kind, str(data), "--model", str(tiny_model), "--output", str(out), *extra]


@pytest.mark.parametrize("kind", ["rft", "dapo"])
def test_closed_stdout_is_refused_before_training(kind: str, tiny_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "ckpt"
    t0 = time.monotonic()
    code, err = _sh([*SWERL, *_args(kind, _data(kind, tiny_model, tmp_path), tiny_model, out)], ">&-", tmp_path)
    assert code == 2, err
    assert err.strip().splitlines() == [f"swerl {kind}: stdout is closed: redirect it or write to a file with -o"]
    assert not out.exists()  # before: the checkpoint was trained and published, then exit 2
    assert not list(tmp_path.glob("ckpt*"))
    assert time.monotonic() - t0 < 60


def _on_a_terminal(cmd: list[str], columns: int) -> tuple[int, str, str]:
    """Run `cmd` with stdout a pseudo-terminal `columns` wide and stderr a pipe; (exit code, terminal text,
    stderr)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(cmd, stdout=follower, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's last writer closed it
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    err = proc.stderr.read().decode() if proc.stderr else ""
    return proc.wait(timeout=600), b"".join(chunks).decode(errors="replace"), err


def test_dapo_summary_on_a_terminal_is_a_table_and_a_record_into_a_pipe(tiny_model: Path, tmp_path: Path) -> None:
    data = _data("dapo", tiny_model, tmp_path)
    out = tmp_path / "k1"
    code, shown, err = _on_a_terminal([sys.executable, "-m", "swerl_cli", *_args("dapo", data, tiny_model, out)], 160)
    assert code == 0, err[-3000:]
    assert '{"schema"' not in shown  # before: the raw record, wrapped and cut by the terminal
    assert "swerl dapo (redirect stdout for the JSON record)" in shown
    assert str(out) in shown  # the checkpoint row, whole
    for row in ("checkpoint", "steps", "final loss", "metrics file", "counts"):
        assert row in shown, shown
    assert "swerl_run_config" not in shown  # config is left out: the checkpoint holds it
    # into a pipe: exactly one JSON record on stdout, and the run on one stderr line
    res = subprocess.run(
        [sys.executable, "-m", "swerl_cli", *_args("dapo", data, tiny_model, tmp_path / "k2")],
        capture_output=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr.decode()[-3000:]
    (line,) = res.stdout.decode().splitlines()
    assert json.loads(line)["kind"] == "dapo"
    assert res.stderr.decode().splitlines()[-1].startswith("swerl dapo: kind dapo; checkpoint ")
