"""`tasks synth` never writes through a symlink of the repository: a link to a host file (or to a host directory)
is neither collected nor mutated, and the host file keeps its bytes, inode and modification time (issue 43)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from swerl_cli.core.errors import InputError
from swerl_cli.tasks.synth.repo import diff_pair, read, snapshot, source_files
from tests.tasks.synth.test_synth_cli import make_repo

HOST = "def host_secret(a, b):\n    if a < b:\n        return a - b\n    return a + b\n"


def _plant_links(repo: Path, outside: Path) -> Path:
    """A host file and a host directory outside `repo`, linked from inside it; returns the host file."""
    outside.mkdir()
    host = outside / "host.py"
    host.write_text(HOST)
    (outside / "pkg").mkdir()
    (outside / "pkg" / "deep.py").write_text(HOST)
    (repo / "tinylib" / "linked.py").symlink_to(host)
    (repo / "tinylib" / "linkdir").symlink_to(outside / "pkg", target_is_directory=True)
    return host


def _facts(p: Path) -> tuple[bytes, int, int]:
    st = os.stat(p)
    return p.read_bytes(), st.st_ino, st.st_mtime_ns


def test_symlinked_files_are_not_collected_read_or_mutated(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "src")
    host = _plant_links(repo, tmp_path / "outside")
    before = _facts(host)
    snap = tmp_path / "snap"
    snapshot(str(repo), snap)
    assert source_files(snap) == ["tinylib/__init__.py", "tinylib/core.py"]
    assert source_files(snap, ("tinylib/*",)) == ["tinylib/__init__.py", "tinylib/core.py"]
    assert read(snap, "tinylib/linked.py") is None  # the host file's text never reaches a mutator
    with pytest.raises(InputError, match="not a regular file"):
        diff_pair(snap, "tinylib/linked.py", "def host_secret(a, b):\n    return 0\n")
    assert _facts(host) == before
    assert (snap / "tinylib" / "linked.py").is_symlink()  # the snapshot keeps the link as git does


def test_diff_pair_replaces_the_file_and_keeps_its_mode(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "src")
    (repo / "tinylib" / "core.py").chmod(0o755)
    snap = tmp_path / "snap"
    snapshot(str(repo), snap)
    target = snap / "tinylib" / "core.py"
    original = target.read_bytes()
    bug, gold = diff_pair(snap, "tinylib/core.py", original.decode().replace("s += x", "s -= x"))
    assert "-        s += x\n+        s -= x" in bug
    assert "old mode" not in bug
    assert "-        s -= x\n+        s += x" in gold
    assert target.read_bytes() == original
    assert os.stat(target).st_mode & 0o777 == 0o755
    assert not [p.name for p in target.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.docker
def test_synth_through_the_cli_leaves_a_linked_host_file_untouched(tmp_path: Path) -> None:
    repo, out = make_repo(tmp_path / "tinylib-src"), tmp_path / "out"
    host = _plant_links(repo, tmp_path / "outside")
    before = _facts(host)
    name = f"synthlink-{secrets.token_hex(3)}"
    cmd = [sys.executable, "-m", "swerl_cli", "tasks", "synth", str(repo), "-o", str(out), "--name", name,
           "--files", "tinylib/*", "--tries", "2", "--holdout", "0", "--validate", "0"]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True)
    try:
        assert res.returncode == 0, res.stderr[-2000:]
        assert _facts(host) == before  # bytes, inode and mtime: nothing was written through the link
        rows = [json.loads(ln) for ln in (out / "train.jsonl").read_text().splitlines()]
        assert rows, res.stderr
        assert {r["synth"]["file"] for r in rows} == {"tinylib/core.py"}
        assert all("linked.py" not in r["bug_patch"] + r["patch"] for r in rows)
        assert "host_secret" not in res.stderr
    finally:
        ids = subprocess.run(["docker", "images", "-q", f"swerl-synth-{name}"], capture_output=True, text=True)
        if ids.stdout.split():
            subprocess.run(["docker", "rmi", "-f", *set(ids.stdout.split())], capture_output=True)
