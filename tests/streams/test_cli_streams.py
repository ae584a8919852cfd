"""Stream contract through the real `swerl` process: bad-input matrix, debug tracebacks, streaming, pipes."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import run_swerl
from tests.records import graded, jsonl

GOOD = jsonl([graded("a", 0, True)])

BAD_INPUTS = {
    "not_json": (GOOD + b"hello world\n", ":2: not valid JSON"),
    "json_array": (b'[{"instance_id": "a"}]\n', ":1: expected a JSON object, got array"),
    "missing_field": (
        GOOD + b'{"instance_id": "b", "grade": {"status": "resolved"}}\n',
        ":2: field 'grade.resolved': missing",
    ),
    "wrong_type": (
        GOOD + jsonl([graded("a", 1, True), {**graded("b", 0, True), "grade": {"resolved": "yes"}}]),
        ":3: field 'grade.resolved': expected bool, got \"yes\"",
    ),
    "invalid_utf8": (GOOD + b'{"instance_id": "\xff\xfe"}\n', ":2: invalid UTF-8 at byte"),
    "truncated_last_line": (GOOD + GOOD[:40], ":2: truncated last line"),
    "unknown_schema_version": (
        jsonl([{**graded("a", 0, True), "schema": "swerl.graded/9"}]),
        ":1: field 'schema': unsupported version 9",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_filter_bad_input_exits_3_with_one_line_and_keeps_output(tmp_path: Path, case: str) -> None:
    data, fragment = BAD_INPUTS[case]
    src = tmp_path / "runs.jsonl"
    src.write_bytes(data)
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"previous": "output"}\n')
    args = ["filter", str(src), "-o", str(out), "--resolved"]
    res = run_swerl(*args)
    err = res.stderr.decode()
    assert res.returncode == 3, err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    assert err.startswith(f"swerl {args[0]}: {src}")
    assert fragment in err
    assert out.read_bytes() == b'{"previous": "output"}\n'
    assert {p.name for p in tmp_path.iterdir()} == {"runs.jsonl", "out.jsonl"}  # no temp file left behind


def test_filter_empty_input_exits_0_with_no_output(tmp_path: Path) -> None:
    res = run_swerl("filter", "--resolved", "-q", input=b"")
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    res = run_swerl("filter", "--resolved", "-q", input=b"\n  \n")
    assert (res.returncode, res.stdout) == (0, b"")


def test_missing_file_is_one_line_exit_3(tmp_path: Path) -> None:
    res = run_swerl("filter", str(tmp_path / "nope.jsonl"))
    assert res.returncode == 3
    assert res.stderr.decode().strip() == f"swerl filter: {tmp_path / 'nope.jsonl'}: no such file"


def test_where_syntax_error_exits_2_with_column() -> None:
    res = run_swerl("filter", "--where", "stats.turns <", input=GOOD)
    assert res.returncode == 2  # a bad flag value is a usage error (issue 43)
    assert res.stderr.decode().splitlines() == [
        "swerl filter: --where: column 14: expected a field, a literal, '[' or '(', found end of expression "
        "in 'stats.turns <'"
    ]


def test_swerl_debug_shows_traceback(tmp_path: Path) -> None:
    src = tmp_path / "runs.jsonl"
    src.write_bytes(BAD_INPUTS["wrong_type"][0])
    res = run_swerl("filter", str(src), "--resolved", env={"SWERL_DEBUG": "1"})
    err = res.stderr.decode()
    assert res.returncode != 0
    assert "Traceback" in err
    assert "InputError" in err


def test_filter_streams_before_input_closes() -> None:
    """Write one record, read one output line, and only then write the next and close stdin."""
    with subprocess.Popen(
        [sys.executable, "-m", "swerl_cli", "filter", "--min-reward", "1", "-q"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:  # the with block closes the pipes
        try:
            assert proc.stdin is not None
            assert proc.stdout is not None
            proc.stdin.write(jsonl([graded("a", 0, False), graded("a", 1, True)]))
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, "no output line before stdin was closed: filter buffers its input"
            first = proc.stdout.readline()
            assert orjson.loads(first)["id"] == "a/r1/1"
            proc.stdin.write(jsonl([graded("b", 0, True)]))
            proc.stdin.close()
            rest = proc.stdout.read()
            assert proc.wait(timeout=30) == 0
        finally:
            proc.kill() if proc.poll() is None else None
    assert orjson.loads(rest)["id"] == "b/r1/0"


def test_filter_into_head_exits_quietly(tmp_path: Path) -> None:
    src = tmp_path / "runs.jsonl"
    src.write_bytes(jsonl([graded(f"t{i}", 0, True, patch="x" * 2000) for i in range(3000)]))
    swerl = f"{sys.executable} -m swerl_cli"
    script = f'set -o pipefail; {swerl} filter {src} --resolved | head -1; echo "rc=${{PIPESTATUS[0]}}"'
    res = subprocess.run(["bash", "-c", script], capture_output=True, timeout=120, env=os.environ.copy())
    lines = res.stdout.decode().splitlines()
    assert orjson.loads(lines[0])["id"] == "t0/r1/0"
    assert lines[-1] == "rc=0"
    assert res.stderr == b""


def test_truncated_gzip_is_one_line_exit_3(tmp_path: Path) -> None:
    import gzip

    src = tmp_path / "runs.jsonl.gz"
    src.write_bytes(gzip.compress(jsonl([graded("a", i, True) for i in range(50)]))[:-30])
    res = run_swerl("filter", str(src))
    err = res.stderr.decode()
    assert res.returncode == 3
    assert err.startswith(f"swerl filter: {src}:")
    assert "cannot read" in err
    assert len(err.splitlines()) == 1
