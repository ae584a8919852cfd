"""`-o /dev/stdout` (or `/dev/fd/1`, `/proc/self/fd/1`, a symlink to one) with stdout closed by the caller: the
run is refused with one line, exit 2, as a closed stdout is without `-o`; before, the CLI held fd 1 with /dev/null
and every record went there while the run exited 0 (issue 43)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from tests.reliability.test_hostile_io import STDOUT_WRITERS, SWERL, _fill, _sh

ALIASES = ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"]
WRITERS = sorted(n for n in STDOUT_WRITERS if n != "eval")  # eval writes its table to stdout only (no -o)


@pytest.mark.parametrize("name", WRITERS)
def test_o_dev_stdout_with_stdout_closed_is_one_line_exit_2(name: str, tmp_path: Path) -> None:
    alias = ALIASES[WRITERS.index(name) % len(ALIASES)]
    code, err = _sh([*SWERL, *_fill(STDOUT_WRITERS[name], tmp_path), "-o", alias], ">&-", tmp_path)
    assert code == 2, err
    assert err.strip().splitlines() == [
        f"swerl {name}: -o {alias}: stdout is closed: redirect it or write to a file with -o"
    ]


def test_a_symlink_to_dev_stdout_is_stdout(tmp_path: Path) -> None:
    """Closed: refused like /dev/stdout. Open on a regular file: the records land in that file (the open
    descriptor), where before the file was replaced by rename and the shell's descriptor kept the old, empty one."""
    link = tmp_path / "out.jsonl"
    link.symlink_to("/dev/stdout")
    cmd = [*SWERL, "filter", str(EXAMPLES / "toy-tasks.jsonl"), "-o", str(link)]
    code, err = _sh(cmd, ">&-", tmp_path)
    assert code == 2, err
    assert err.strip().splitlines()[-1].endswith(f"-o {link}: stdout is closed: redirect it or write to a file with -o")
    dest = tmp_path / "stdout.jsonl"
    with open(dest, "wb") as fh:
        res = subprocess.run(cmd, stdout=fh, stderr=subprocess.PIPE, timeout=120)
    assert res.returncode == 0, res.stderr.decode()
    rows = [json.loads(ln) for ln in dest.read_text().splitlines()]
    assert [r["instance_id"] for r in rows] == [
        json.loads(ln)["instance_id"] for ln in (EXAMPLES / "toy-tasks.jsonl").read_text().splitlines()
    ]


def test_o_dev_stdout_with_stdout_open_still_writes_and_a_closed_fd_n_is_refused(tmp_path: Path) -> None:
    cmd = [*SWERL, "filter", str(EXAMPLES / "toy-tasks.jsonl"), "-o", "/dev/stdout"]
    res = subprocess.run(cmd, capture_output=True, timeout=120)
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout.count(b"\n") == len((EXAMPLES / "toy-tasks.jsonl").read_text().splitlines())
    res = subprocess.run([*cmd[:-1], "/dev/fd/9"], capture_output=True, timeout=120, env=os.environ)
    assert res.returncode == 2, res.stderr.decode()
    assert res.stderr.decode().strip().splitlines() == [
        "swerl filter: -o /dev/fd/9: descriptor 9 is not open: open it (e.g. 9>FILE) or write to a file with -o"
    ]
