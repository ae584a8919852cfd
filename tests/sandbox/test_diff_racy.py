"""The submitted patch is the work tree's diff even when the agent's edit lands in the same second as the sandbox's
last index write and keeps the file's size (a swapped pair of arguments, a flipped operator).

Found in `make paper-mini`: 4-7 of 50 gold demonstrations (`--policy gold-steps`, which edits within a second of the
sandbox start) were recorded with an empty patch under `--concurrency 6`, so graded unresolved. The diff ran
`git add -A` on a copy of the index; `cp` gave the copy a new mtime, so git trusted the stat data of an entry the
original index marked as racily clean (entry mtime == index mtime), and the same-size, same-second edit looked
unchanged. The diff now builds a fresh index from base_commit in a throwaway git directory (gitops.diff_command),
so no stat data is trusted at all and every file is re-read.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from swerl_cli.sandbox.gitops import diff_command

IDENT = "-c user.name=t -c user.email=t@localhost -c commit.gpgsign=false"


def _sh(cmd: str, cwd: Path) -> str:
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _same_second_fix_then_diff(repo: Path, command: str) -> tuple[bool, str]:
    """The sandbox start's bug commit (as `commit_bug`), the agent's in-place fix, the diff a second later; whether
    the commit and the fix fell in one second, and the diff."""
    (repo / "f.py").write_text("x = f(a, b)\n")
    _sh(f"git init -q && git add f.py && git {IDENT} commit -qm base", repo)
    (repo / "bug.patch").write_text("--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-x = f(a, b)\n+x = f(b, a)\n")
    start = int(time.time())
    _sh(f"git apply --index bug.patch && rm bug.patch && git update-ref HEAD $(git {IDENT} commit-tree "
        "$(git write-tree) -m bug)", repo)  # fmt: skip
    with open(repo / "f.py", "r+") as fh:  # the fix, written in place: same inode, same size
        fh.write("x = f(a, b)\n")
    same_second = int(time.time()) == start
    time.sleep(1.1)  # submit comes later
    return same_second, _sh(command, repo)


def _diffs(tmp_path: Path, command: str, tries: int = 3) -> list[str]:
    """The diffs of `tries` runs whose commit and fix fell in one second (a run across a second boundary is redone)."""
    out: list[str] = []
    for i in range(tries * 3):
        repo = tmp_path / str(i)
        repo.mkdir()
        same_second, diff = _same_second_fix_then_diff(repo, command)
        if same_second:
            out.append(diff)
        if len(out) == tries:
            return out
    raise AssertionError("the commit and the edit never fell in one second")


def test_same_second_same_size_fix_is_in_the_patch(tmp_path: Path) -> None:
    for diff in _diffs(tmp_path, diff_command("HEAD", [], ".", "t")):
        assert "-x = f(b, a)" in diff
        assert "+x = f(a, b)" in diff
