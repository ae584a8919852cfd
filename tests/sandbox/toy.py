"""A tiny task built in the test session: a git repo with a bug, its fix and tests, packed into an image.

The repo is made on the host (fixed author and dates, so commits are reproducible), then shipped into the
image by the task's `setup` as a base64 tarball. The "dirty" variant also keeps the fix reachable in every
way an agent could look (branch, tag, remote, stash, reflog, packed objects) to exercise episode hygiene.
"""

from __future__ import annotations

import base64
import io
import subprocess
import tarfile
from pathlib import Path

ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "PATH": "/usr/bin:/bin",
}
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
CALC_FIXED = "def add(a, b):\n    return a + b  # FIXED-MARKER-7f3a\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
TESTS_NEW = (
    "import pytest\n\nfrom calc import add, mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n\n\n"
    "@pytest.mark.parametrize('expr', ['1 + 1', 'ü [x]'])\ndef test_add_param(expr):\n    assert add(1, 1) == 2\n"
)
F2P = [
    "tests/test_calc.py::test_add",
    "tests/test_calc.py::test_add_param[1 + 1]",
    "tests/test_calc.py::test_add_param[ü [x]]",
]
P2P = ["tests/test_calc.py::test_mul"]
TEST_CMD = "python3 -m pytest -rA --tb=no -p no:cacheprovider --color=no tests/test_calc.py"


def _git(repo: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=ENV, input=input
    ).stdout


def make_repo(root: Path, dirty: bool) -> dict:
    """Create the repo under root/repo; return base_commit, gold patch, test patch."""
    repo = root / "repo"
    (repo / "tests").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text(CALC)
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    (repo / "conftest.py").write_text("import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text(CALC_FIXED)
    gold = _git(repo, "diff")
    _git(repo, "checkout", "-q", "calc.py")
    (repo / "tests" / "test_calc.py").write_text(TESTS_NEW)
    test_patch = _git(repo, "diff")
    _git(repo, "checkout", "-q", "tests/test_calc.py")
    if dirty:
        (repo / "calc.py").write_text(CALC_FIXED)
        (repo / "tests" / "test_calc.py").write_text(TESTS_NEW)
        _git(repo, "commit", "-qam", "the fix")
        _git(repo, "branch", "future")
        _git(repo, "tag", "-a", "v-fix", "-m", "fix")
        _git(repo, "remote", "add", "origin", "https://example.invalid/repo.git")
        _git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
        _git(repo, "gc", "-q")
        _git(repo, "reset", "-q", "--hard", base)
        (repo / "calc.py").write_text(CALC_FIXED)
        _git(repo, "stash", "-q")
        _git(repo, "branch", "-D", "future")
    return {"base_commit": base, "patch": gold, "test_patch": test_patch}


def setup_commands(repo: Path, workdir: str = "/testbed") -> list[str]:
    """Setup lines that unpack the repo (with its .git) into workdir."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(repo, arcname=".")
    blob = base64.b64encode(buf.getvalue()).decode()
    return [f"mkdir -p {workdir}", f"echo {blob} | base64 -d | tar -xz -C {workdir}"]


def toy_task(tmp: Path, image: str, *, dirty: bool = True, **over: object) -> dict:
    """A swerl.task/1 record for the toy repo (image name given; build it with swerl_cli.sandbox.build)."""
    info = make_repo(tmp, dirty)
    task = {
        "schema": "swerl.task/1",
        "instance_id": "toy__calc-1",
        "repo": "toy/calc",
        "problem_statement": "add() subtracts",
        "image": image,
        "workdir": "/testbed",
        "test_cmd": TEST_CMD,
        "FAIL_TO_PASS": F2P,
        "PASS_TO_PASS": P2P,
        "setup": setup_commands(tmp / "repo"),
        **info,
    }
    task.update(over)
    return task
