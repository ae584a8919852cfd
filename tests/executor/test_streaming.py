"""grade writes each record as it finishes even while its input pipe is still open and waiting for the next line
(the job stream reads its input in a helper thread): `collect | grade` streams end to end."""

from __future__ import annotations

import select
import subprocess
import sys
import time

import pytest

from tests.conftest import EXAMPLES, run_swerl

pytestmark = pytest.mark.docker


def test_grade_emits_a_record_before_its_input_ends(tmp_path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text((EXAMPLES / "tasks.jsonl").read_text().splitlines(keepends=True)[0])
    gold = run_swerl("collect", str(one), "--policy", "gold", timeout=300)
    assert gold.returncode == 0, gold.stderr.decode()[-2000:]
    proc = subprocess.Popen(
        [sys.executable, "-m", "swerl_cli", "grade", "--workers", "2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        proc.stdin.write(gold.stdout)
        proc.stdin.flush()  # stdin stays open: grade is blocked reading its next line
        ready, _, _ = select.select([proc.stdout], [], [], 240)
        assert ready, "no graded record while the input was still open"
        line = proc.stdout.readline()
        assert b'"status":"resolved"' in line
        time.sleep(0.2)
        assert proc.poll() is None  # still waiting for input
    finally:
        _, err = proc.communicate(timeout=120)  # closes stdin: grade sees the end of its input
    assert proc.returncode == 0, err.decode()[-2000:]
