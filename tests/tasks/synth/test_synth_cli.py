"""`swerl tasks synth` end to end on a small repository, through the CLI with the real engine:
synth -> swerl tasks build -> swerl tasks validate (gold resolves, empty does not); and its bad-input exits."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

CORE = '''"""Small helpers."""


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def total(xs):
    s = 0
    for x in xs:
        s += x
    return s
'''
TESTS = """from tinylib.core import clamp, total


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_edges():
    assert clamp(-1, 0, 10) == 0
    assert clamp(11, 0, 10) == 10


def test_total():
    assert total([1, 2, 3]) == 6
"""


def swerl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run([sys.executable, "-m", "swerl_cli", *args], capture_output=True, text=True, env=os.environ)
    if check:
        assert res.returncode == 0, res.stderr[-2000:]
    return res


def make_repo(root: Path) -> Path:
    (root / "tinylib").mkdir(parents=True)
    (root / "tinylib" / "__init__.py").write_text("")
    (root / "tinylib" / "core.py").write_text(CORE)
    (root / "tests").mkdir()
    (root / "tests" / "test_core.py").write_text(TESTS)
    return root


@pytest.mark.docker
def test_synth_build_validate_through_the_cli(tmp_path: Path) -> None:
    repo, out = make_repo(tmp_path / "tinylib-src"), tmp_path / "out"
    name = f"synthtest-{secrets.token_hex(3)}"
    res = swerl("tasks", "synth", str(repo), "-o", str(out), "--name", name, "--max-tasks", "2", "--tries", "2",
                "--holdout", "0.5", "--validate", "0")  # fmt: skip
    image = None
    try:
        assert res.stdout == ""  # records go to the files, never to stdout
        m = re.search(r"baseline: 3 tests pass in both runs; test timeout (\d+)s", res.stderr)
        assert m, res.stderr
        assert int(m.group(1)) >= 30  # 10x the slower baseline run, at least 30 s
        rows = {
            s: [json.loads(ln) for ln in (out / f"{s}.jsonl").read_text().splitlines()] for s in ("train", "heldout")
        }
        assert [len(rows["train"]), len(rows["heldout"])] == [1, 1], res.stderr
        fns = {s: {r["synth"]["function"] for r in rs} for s, rs in rows.items()}
        assert fns["train"].isdisjoint(fns["heldout"])
        stats = json.loads((out / "stats.json").read_text())
        assert sum(v["kept"] for v in stats["per_mutator"].values()) == 2
        assert stats["baseline_tests"] == 3
        for r in [*rows["train"], *rows["heldout"]]:
            image = r["image"]
            assert (r["base_commit"], r["patch_kind"], r["test_patch"]) == ("HEAD", "bug", "")
            assert r["FAIL_TO_PASS"]
            assert set(r["FAIL_TO_PASS"]).isdisjoint(r["PASS_TO_PASS"])
            assert len(r["FAIL_TO_PASS"]) + len(r["PASS_TO_PASS"]) == 3
            assert r["problem_statement"].startswith(f"The test `{sorted(r['FAIL_TO_PASS'])[0]}` fails")
            assert r["patch"].startswith("diff --git a/tinylib/core.py b/tinylib/core.py")
            plus = [ln for ln in r["bug_patch"].splitlines() if ln.startswith("+") and not ln.startswith("+++")]
            assert plus == [ln.replace("-", "+", 1) for ln in r["patch"].splitlines()
                            if ln.startswith("-") and not ln.startswith("---")]  # fmt: skip
        files = [str(out / "train.jsonl"), str(out / "heldout.jsonl")]
        built = swerl("tasks", "build", *files, "--allow-source", str(out))
        assert f"{image}: cached" in built.stderr  # synth built it with the same recipe
        checked = swerl("tasks", "validate", *files, "-r", "1", "-o", str(tmp_path / "valid.jsonl"))
        assert "2 valid, 0 invalid" in checked.stderr
        for ln in (tmp_path / "valid.jsonl").read_text().splitlines():
            v = json.loads(ln)["validation"]
            assert (v["gold_statuses"], v["empty_statuses"]) == (["resolved"], ["unresolved"])
    finally:
        if image:
            subprocess.run(["docker", "rmi", "-f", image], capture_output=True)


def test_bad_input_is_one_line_and_exit_3(tmp_path: Path) -> None:
    res = swerl("tasks", "synth", str(tmp_path / "nope"), "-o", str(tmp_path / "o"), check=False)
    assert (res.returncode, res.stdout) == (3, "")
    assert res.stderr.strip().splitlines() == [f"swerl tasks synth: {tmp_path / 'nope'}: not a directory"]
    res = swerl("tasks", "synth", str(tmp_path), "-o", str(tmp_path / "o"), "--mutators", "nope", check=False)
    assert res.returncode == 2
    assert "--mutators: unknown nope" in res.stderr
    assert "Traceback" not in res.stderr


SEQ = """def last(xs):
    return xs[len(xs) - 1]


def ratio(a, b):
    total = a + b
    return a / total
"""
SEQ_TESTS = """from tinylib.seq import last, ratio


def test_last():
    assert last([4, 5]) == 5


def test_ratio():
    assert ratio(1, 3) == 0.25
"""


@pytest.mark.docker
def test_located_keeps_only_mutants_whose_traceback_shows_the_line(tmp_path: Path) -> None:
    repo, out = make_repo(tmp_path / "tinylib-src"), tmp_path / "out"
    (repo / "tinylib" / "seq.py").write_text(SEQ)
    (repo / "tests" / "test_seq.py").write_text(SEQ_TESTS)
    name = f"synthloc-{secrets.token_hex(3)}"
    res = swerl("tasks", "synth", str(repo), "-o", str(out), "--name", name, "--files", "tinylib/seq.py",
                "--mutators", "off_by_one,op_flip", "--tries", "6", "--holdout", "0", "--validate", "0",
                "--located")  # fmt: skip
    try:
        rows = [json.loads(ln) for ln in (out / "train.jsonl").read_text().splitlines()]
        stats = json.loads((out / "stats.json").read_text())
        unlocated = sum(v.get("unlocated", 0) for v in stats["per_mutator"].values())
        # `xs[len(xs) - 1]` -> `... + 1` / `- 2` raise IndexError inside seq.py (located); ratio's value-only
        # failures (`a - b`, `a * total`, ...) show only the test's line (unlocated)
        assert rows, res.stderr
        assert unlocated >= 1, res.stderr
        for r in rows:
            line = r["synth"]["line"]
            assert f"tinylib/seq.py:{line}: in " in r["problem_statement"], r["problem_statement"]
        assert ": unlocated" in res.stderr
    finally:
        ids = subprocess.run(["docker", "images", "-q", f"swerl-synth-{name}"], capture_output=True, text=True)
        if ids.stdout.split():
            subprocess.run(["docker", "rmi", "-f", *set(ids.stdout.split())], capture_output=True)
