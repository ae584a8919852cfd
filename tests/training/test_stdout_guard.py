"""`swerl rft` and `swerl dapo` write their summary record, and nothing else, to stdout, whatever a library or a child
process prints to descriptor 1 while they train (DeepSpeed's op builds, compilers): a `| jq` or a pipe into the next
stage reads one record. rft's summary also names the runs its samples came from (`data.runs`).

The trainer function is wrapped, in the `swerl` process itself, so it first prints to descriptor 1 three ways: a
child process, a raw write, a Python print.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.records import rollout
from tests.training.fixtures import make_trajectory, write_jsonl

pytestmark = pytest.mark.train

NOISY = """
import os, subprocess, sys
import swerl_cli.training.{module} as m
real = m.{fn}
def noisy(*a, **k):
    subprocess.run(["sh", "-c", "echo child-noise"], check=True)
    os.write(1, b"fd1-noise\\n")
    print("print-noise", flush=True)
    return real(*a, **k)
m.{fn} = noisy
sys.argv = ["swerl", *sys.argv[1:]]
from swerl_cli.cli import main
main()
"""


def _noisy_swerl(module: str, fn: str, *args: str) -> subprocess.CompletedProcess[str]:
    code = NOISY.format(module=module, fn=fn)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600)


def _only_the_summary(res: subprocess.CompletedProcess[str], kind: str) -> dict:
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    assert len(lines) == 1, res.stdout[:2000]
    summary = json.loads(lines[0])
    assert summary["kind"] == kind
    for noise in ("child-noise", "fd1-noise", "print-noise"):
        assert noise in res.stderr
    return summary


def test_rft_stdout_is_the_summary_only(tiny_model: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    data = write_jsonl(tmp_path / "runs.jsonl", [make_trajectory(tok, i) for i in range(2)])
    res = _noisy_swerl(
        "rft", "run_rft", "rft", str(data), "--model", str(tiny_model), "--output", str(tmp_path / "out"),
        "--batch-size", "2",
    )  # fmt: skip
    summary = _only_the_summary(res, "rft")
    assert summary["data"]["runs"] == {"run0": 2}  # where the trained samples came from


def test_dapo_stdout_is_the_summary_only(tiny_model: Path, tmp_path: Path) -> None:
    records = [rollout("A", 0, resolved=True), rollout("A", 1), rollout("A", 2, resolved=True), rollout("A", 3)]
    data = write_jsonl(tmp_path / "graded.jsonl", records)
    res = _noisy_swerl(
        "dapo", "run_dapo", "dapo", str(data), "--model", str(tiny_model), "--output", str(tmp_path / "out"),
        "--group-size", "4", "--batch-size", "4",
    )  # fmt: skip
    _only_the_summary(res, "dapo")
