"""`swerl dapo --follow` on a FIFO (issue 43): opening one for reading blocked until a writer appeared, so
`--follow FIFO --idle-timeout 2` with no writer never ended. A FIFO is now opened without waiting and followed like a
file while writers come and go; a FIFO or a device inside a followed directory is one line, exit 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from swerl_cli.core.errors import InputError
from swerl_cli.training.follow_stream import tail_records
from tests.records import rollout

SWERL = [sys.executable, "-m", "swerl_cli"]


def test_follow_of_a_fifo_without_a_writer_ends_at_the_idle_timeout(tiny_model: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "graded.fifo"
    os.mkfifo(fifo)
    cmd = [*SWERL, "dapo", "--follow", str(fifo), "--model", str(tiny_model), "-o", str(tmp_path / "run"),
           "--idle-timeout", "2"]  # fmt: skip
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert time.monotonic() - t0 < 20
    assert (res.returncode, res.stdout) == (0, ""), res.stderr  # no update: no summary record
    lines = res.stderr.strip().splitlines()
    assert lines[-1] == f"dapo --follow: {fifo}: no new line for 2 s (--idle-timeout); stopping after 0 updates"
    assert "Traceback" not in res.stderr


def test_a_fifo_or_a_device_in_a_followed_directory_is_one_line_exit_3(tiny_model: Path, tmp_path: Path) -> None:
    d = tmp_path / "stream"
    d.mkdir()
    os.mkfifo(d / "a.jsonl")
    for src, kind in ((d, "a FIFO"), (Path("/dev/null"), "a device")):
        cmd = [*SWERL, "dapo", "--follow", str(src), "--model", str(tiny_model), "-o", str(tmp_path / "run"),
               "--idle-timeout", "2"]  # fmt: skip
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert res.returncode == 3, res.stderr
        bad = d / "a.jsonl" if src == d else src
        assert res.stderr.strip().splitlines()[-1] == (
            f"swerl dapo: {bad}: is {kind}: --follow reads a regular file, a directory of them, a FIFO named as the "
            "input, or -"
        )


def test_tail_of_a_fifo_reads_whole_lines_across_writers(tmp_path: Path) -> None:
    fifo = tmp_path / "g.fifo"
    os.mkfifo(fifo)
    lines = [json.dumps(rollout("A", i)).encode() + b"\n" for i in range(3)]

    def writers() -> None:
        time.sleep(0.3)  # the reader is already waiting, with no writer yet
        with open(fifo, "wb") as fh:  # writer 1: a line, then half of the next
            fh.write(lines[0] + lines[1][:7])
            fh.flush()
            time.sleep(0.3)
        time.sleep(0.3)  # no writer for a while: still followed
        with open(fifo, "wb") as fh:  # writer 2: the rest of that line, and one more
            fh.write(lines[1][7:] + b"\n" + lines[2])

    t = threading.Thread(target=writers)
    t.start()
    t0 = time.monotonic()
    got = [(loc.line, loc.obj["sample"]) for loc in tail_records(str(fifo), poll_s=0.02, idle_timeout_s=1.0)]
    t.join()
    assert got == [(1, 0), (2, 1), (4, 2)]  # line 3 is the blank line writer 2 began with
    assert time.monotonic() - t0 < 5


def test_tail_of_a_fifo_refuses_a_line_past_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWERL_MAX_LINE_BYTES", "1000")
    fifo = tmp_path / "g.fifo"
    os.mkfifo(fifo)

    def writer() -> None:
        with open(fifo, "wb") as fh:
            fh.write(b"x" * 5000)

    t = threading.Thread(target=writer)
    t.start()
    with pytest.raises(InputError, match="line longer than 1000 bytes"):
        list(tail_records(str(fifo), poll_s=0.02, idle_timeout_s=1.0))
    t.join()
