"""A file that is not JSON Lines at all (a parquet, a binary) is one error line, not one per line (issue 43: 632
lines for a parquet through `convert`). Commands that keep the good rows of a mostly-good file still name each bad
line once a good one has been read; `eval` and `filter` stop at the first bad line anyway (exit 3)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from swerl_cli.core.errors import InputError
from swerl_cli.streams.jsonl import PROBE_LINES, lenient_records
from tests.conftest import run_swerl

GOOD = {"instance_id": "a__b-1", "model_name_or_path": "m", "model_patch": "diff --git a/x b/x\n"}


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    """20 KB of bytes with many newlines among them (as an ELF or a zip has), some not UTF-8."""
    rng = random.Random(7)
    data = bytes(rng.choice(b"\x00\x7f\xff\xc3\n{}ab\x89PNG") for _ in range(20_000))
    path = tmp_path / "blob.jsonl"
    path.write_bytes(data)
    assert data.count(b"\n") > 500
    return path


@pytest.fixture
def parquet(tmp_path: Path) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [{"instance_id": f"a__b-{i}", "problem_statement": f"line\n{i}\n" * 3} for i in range(400)]
    path = tmp_path / "train-00000.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, compression="NONE")
    assert path.read_bytes().count(b"\n") > 600  # what made 632 error lines
    return path


def _one_line(res, cmd: str, path: Path, code: int) -> str:
    err = res.stderr.decode().splitlines()
    assert res.returncode == code, err[:5]
    assert "Traceback" not in res.stderr.decode()
    assert err[0].startswith(f"swerl {cmd}: {path}:1: ")
    assert len([e for e in err if str(path) in e]) == 1, err[:5]
    return err[0]


@pytest.mark.parametrize("kind", ["binary", "parquet"])
def test_convert_names_a_file_that_is_not_json_lines_once(kind: str, request: pytest.FixtureRequest) -> None:
    path: Path = request.getfixturevalue(kind)
    res = run_swerl("convert", str(path))
    line = _one_line(res, "convert", path, 4)  # one broken source costs one line; exit 4 as for any broken file
    assert "not a JSON Lines file: none of its first 5 lines is a JSON object" in line
    assert line.endswith("expected one JSON object per line")
    assert res.stderr.decode().splitlines()[-1] == "swerl convert: 0 trajectories written, 1 skipped"
    res = run_swerl("convert", "--from", "swerl", "--to", "swebench-preds", str(path))
    _one_line(res, "convert", path, 3)  # --from swerl: a source that cannot be read at all stops the run
    res = run_swerl("convert", "--to", "swebench-preds", "-", input=path.read_bytes())
    assert res.returncode == 4
    assert res.stderr.decode().splitlines()[0].startswith("swerl convert: <stdin>:1: not a JSON Lines file")
    assert len(res.stderr.decode().splitlines()) == 2


@pytest.mark.parametrize("cmd", ["eval", "filter"])
def test_eval_and_filter_stop_at_the_first_line_of_a_binary(cmd: str, binary: Path) -> None:
    _one_line(run_swerl(cmd, str(binary)), cmd, binary, 3)


def test_a_good_line_after_a_few_bad_ones_keeps_the_per_line_report(tmp_path: Path) -> None:
    src = tmp_path / "p.jsonl"
    lines = [
        b"not json",
        b"\xff\xfe",
        json.dumps(GOOD).encode(),
        b"[1]",
        json.dumps({**GOOD, "instance_id": "c"}).encode(),
    ]
    src.write_bytes(b"\n".join(lines) + b"\n")
    res = run_swerl("convert", "--to", "swebench-preds", str(src))
    err = res.stderr.decode().splitlines()
    assert res.returncode == 4
    assert [e.split(": ")[1] for e in err[:3]] == [f"{src}:1", f"{src}:2", f"{src}:4"]
    assert err[-1] == "swerl convert: 2 predictions written, 3 skipped"


def test_lenient_records_gives_up_after_the_probe_lines(tmp_path: Path) -> None:
    src = tmp_path / "x.jsonl"
    src.write_bytes(b"x\n" * (PROBE_LINES - 1) + json.dumps(GOOD).encode() + b"\n")
    rows = list(lenient_records(str(src)))
    assert [isinstance(r, InputError) for r in rows] == [True] * (PROBE_LINES - 1) + [False]
    src.write_bytes(b"x\n" * PROBE_LINES + json.dumps(GOOD).encode() + b"\n")
    with pytest.raises(InputError, match=f"none of its first {PROBE_LINES} lines"):
        list(lenient_records(str(src)))
    src.write_bytes(b'{"truncated": ')  # a file of one bad line: that line's own error
    with pytest.raises(InputError, match="truncated last line"):
        list(lenient_records(str(src)))
