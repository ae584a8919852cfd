"""Issue 43 (host reach): an output replaced atomically cannot be redirected by a symlink planted at its temporary
name. The temp name used to be `.NAME.PID.tmp`, opened with O_TRUNC through any link there: the planted link's
target received the records and the rename then left `-o` itself a symlink. Now the name has random bits and is
created with O_EXCL|O_NOFOLLOW. The link is planted for the exact pid swerl runs as (a shell that `exec`s it)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

RECORDS = b'{"id": "a"}\n{"id": "b"}\n'


@pytest.mark.parametrize("command", [["filter"], ["filter", "--where", 'id == "a" or id == "b"']])
def test_a_symlink_at_the_old_temp_name_receives_nothing_and_o_stays_a_file(tmp_path: Path, command: list[str]):
    src, out, victim = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "victim.txt"
    src.write_bytes(RECORDS)
    victim.write_text("host file\n")
    swerl = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "swerl_cli", *command, str(src), "-o", str(out)])
    plant = f"ln -s {shlex.quote(str(victim))} {shlex.quote(str(tmp_path))}/.out.jsonl.$$.tmp"
    res = subprocess.run(["bash", "-c", f"{plant} && exec {swerl}"], capture_output=True, timeout=120)
    assert res.returncode == 0, res.stderr.decode()
    assert victim.read_text() == "host file\n"  # nothing written through the planted link
    assert not out.is_symlink()
    assert out.read_bytes() == RECORDS
