"""`swerl tasks synth` on the real library `make setup` fetches (toolz 1.2.0's sdist from PyPI, with its own 192
tests), through the Makefile target users run (`make synth-tasks`, a small --max-tasks), then the tasks through the
normal pipeline: `swerl collect --policy gold | swerl grade` resolves every one, and `swerl tasks validate` finds
gold resolving and the empty patch not.

The image is swerl-synth-toolz, the one `make synth-tasks` and paper-mini use, so it is kept.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import IN_CI, ROOT

pytestmark = [pytest.mark.docker, pytest.mark.slow]
SRC = ROOT / ".cache/synth/src/toolz-1.2.0"
SWERL = f"{sys.executable} -m swerl_cli"


def _pipe(tasks: Path, policy: str) -> list[dict]:
    cmd = f"set -o pipefail; {SWERL} collect {tasks} --policy {policy} --concurrency 2 | {SWERL} grade --workers 2"
    res = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    return [json.loads(ln) for ln in res.stdout.splitlines()]


def test_make_synth_tasks_on_toolz_gives_tasks_gold_resolves_and_empty_does_not(tmp_path: Path) -> None:
    if not (SRC / "PKG-INFO").exists():
        if IN_CI:
            pytest.fail(f"CI=true but {SRC} is missing; run `make synth-lib` (part of `make setup`)")
        pytest.skip(f"{SRC} is missing (`make synth-lib` fetches it)")
    out = tmp_path / "toolz"
    res = subprocess.run(
        ["make", "-C", str(ROOT), "--no-print-directory", "synth-tasks", f"SYNTH_OUT={out}", "SYNTH_MAX_TASKS=2",
         "SYNTH_ARGS=--mutators off_by_one,op_flip --holdout 0.5"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["baseline_tests"] > 150  # toolz's own suite ran (test_tlz.py left out)
    assert f"baseline: {stats['baseline_tests']} tests pass in both runs" in res.stderr
    train = [json.loads(ln) for ln in (out / "train.jsonl").read_text().splitlines()]
    heldout = [json.loads(ln) for ln in (out / "heldout.jsonl").read_text().splitlines()]
    assert len(train) + len(heldout) == 2
    assert {r["synth"]["function"] for r in train}.isdisjoint({r["synth"]["function"] for r in heldout})
    for r in train + heldout:
        assert r["synth"]["mutator"] in ("off_by_one", "op_flip")
        assert r["patch"].startswith("diff --git a/toolz/")
        assert r["FAIL_TO_PASS"]
        assert len(r["FAIL_TO_PASS"]) + len(r["PASS_TO_PASS"]) == stats["baseline_tests"]
        assert r["FAIL_TO_PASS"][0] in r["problem_statement"]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text((out / "train.jsonl").read_text() + (out / "heldout.jsonl").read_text())
    gold = _pipe(tasks, "gold")
    assert [g["grade"]["status"] for g in gold] == ["resolved", "resolved"]
    checked = subprocess.run(
        [sys.executable, "-m", "swerl_cli", "tasks", "validate", str(tasks), "-r", "1", "-o",
         str(tmp_path / "v.jsonl")],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert "2 valid, 0 invalid" in checked.stderr, checked.stderr[-2000:]
    for ln in (tmp_path / "v.jsonl").read_text().splitlines():
        v = json.loads(ln)["validation"]
        assert (v["gold_statuses"], v["empty_statuses"]) == (["resolved"], ["unresolved"])
