"""A small package with a history to mine: two real fixes with tests, a docs-only commit, a flaky test."""

from __future__ import annotations

import subprocess
from pathlib import Path

OPS = '''"""Small numeric helpers."""


def clamp(x, lo, hi):
    """x limited to the range [lo, hi]."""
    return max(lo, min(x, {hi}))


def mean(xs):
    """Arithmetic mean of a non-empty sequence."""
    return sum(xs) {div} len(xs)


def median(xs):
    """Middle value (mean of the two middle values for even lengths)."""
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
'''
TEST_OPS = """from calc.ops import clamp, median


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_clamp_below():
    assert clamp(-5, 0, 10) == 0
"""
TEST_CLAMP_MORE = """

def test_clamp_inside():
    assert clamp(4, 0, 10) == 4


def test_clamp_above():
    assert clamp(50, 0, 10) == 10
"""
TEST_MEAN = """from calc.ops import mean


def test_mean_fraction():
    assert mean([1, 2]) == 1.5


def test_mean_whole():
    assert mean([2, 4]) == 3
"""
SCALE = '''

def scale(xs, k):
    """Every element multiplied by k."""
    return [x * k for x in xs]
'''
TEST_SCALE = """import random

import pytest

from calc import ops


def test_scale():
    assert ops.scale([1, 2], 3) == [3, 6]


@pytest.mark.parametrize("attempt", range(16))
def test_scale_timing(attempt):
    # timing-dependent in real life; here plainly random, before and after the fix alike, so across 2 repeats
    # some case changes outcome (all 16 cases stay put in both states with probability 4**-16)
    assert random.SystemRandom().random() < 0.5
"""


def _git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.invalid", "GIT_COMMITTER_NAME": "Dev",
           "GIT_COMMITTER_EMAIL": "dev@example.invalid", "HOME": str(repo), "PATH": "/usr/bin:/bin"}  # fmt: skip
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    res = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
    return res.stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str, day: int) -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message, date=f"2025-01-{day:02d}T12:00:00Z")
    return _git(repo, "rev-parse", "HEAD")


def build_repo(repo: Path) -> dict[str, str]:
    """Create the repository; returns the commit of each step by name."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    ops = OPS.replace("{hi}", "lo").replace("{div}", "//")
    commits = {
        "initial": _commit(
            repo,
            {"calc/__init__.py": "", "calc/ops.py": ops, "tests/test_ops.py": TEST_OPS, "README.md": "# calc\n"},
            "Initial calc package",
            1,
        )
    }
    ops = ops.replace("min(x, lo)", "min(x, hi)")
    commits["fix_clamp"] = _commit(
        repo,
        {"calc/ops.py": ops, "tests/test_ops.py": TEST_OPS + TEST_CLAMP_MORE},
        "Fix clamp ignoring the upper bound\n\nclamp(50, 0, 10) returned 0 instead of 10.",
        2,
    )
    commits["docs"] = _commit(repo, {"README.md": "# calc\n\nNumeric helpers: clamp, mean, median.\n"}, "Docs", 3)
    ops = ops.replace("sum(xs) // len(xs)", "sum(xs) / len(xs)")
    commits["fix_mean"] = _commit(
        repo, {"calc/ops.py": ops, "tests/test_mean.py": TEST_MEAN}, "mean() truncates fractional results", 4
    )
    commits["flaky"] = _commit(repo, {"calc/ops.py": ops + SCALE, "tests/test_scale.py": TEST_SCALE}, "Add scale()", 5)
    return commits


def remove_mined_images(name: str) -> None:
    """Remove the images `swerl tasks mine --name NAME` built (swerl-mined-NAME:*), whatever the test's outcome."""
    listing = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", f"swerl-mined-{name}"],
        capture_output=True,
        text=True,
    )
    if listing.stdout.split():
        subprocess.run(["docker", "rmi", "-f", *listing.stdout.split()], capture_output=True)
