"""The output contract (outputs.py, docs/reliability.md): special files, torn lines, locks, own input, signals,
full disk.

Grade runs here need no sandbox: every input id is already in the output (skipped) or the input is empty.
"""

from __future__ import annotations

import fcntl
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from swerl_cli.core.errors import OutputError, UsageError
from swerl_cli.streams.outputs import open_output
from tests.conftest import EXAMPLES, run_swerl
from tests.procs import child_env, finish, reap
from tests.records import graded, jsonl

TASK = orjson.loads((EXAMPLES / "toy-tasks.jsonl").read_bytes().splitlines()[0])
IID = TASK["instance_id"]


def _pred(model: str) -> dict:
    return {"instance_id": IID, "model_name_or_path": model, "model_patch": ""}


def _graded_pred(model: str) -> dict:
    return {**_pred(model), "id": f"{IID}/{model}", "schema": "swerl.graded/1", "grade": _grade()}


def _grade() -> dict:
    return {"status": "unresolved", "resolved": False, "reward": 0.0, "duration_s": 0.1}


def _grade_args(tmp_path: Path, preds: list[dict], out: Path | str, *extra: str) -> list[str]:
    (tmp_path / "tasks.jsonl").write_bytes(jsonl([TASK]))
    (tmp_path / "p.jsonl").write_bytes(jsonl(preds))
    return ["grade", str(tmp_path / "p.jsonl"), "--tasks", str(tmp_path / "tasks.jsonl"), "-o", str(out), *extra]


def _one_line(res: subprocess.CompletedProcess[bytes]) -> str:
    err = res.stderr.decode()
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _refused(res: subprocess.CompletedProcess[bytes], code: int, message: str, out: Path, before: bytes) -> None:
    """The run exited `code` with one stderr line holding `message`, and `out` still holds `before`."""
    assert res.returncode == code
    assert message in _one_line(res)
    assert out.read_bytes() == before


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
def test_special_file_target_is_written_in_place_never_replaced(tmp_path: Path) -> None:
    """Defect 1: filter/import renamed a temp file over the target and grade deleted it first."""
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    (tmp_path / "g.jsonl").write_bytes(jsonl([graded("a", 0, True)]))
    (tmp_path / "rows.jsonl").write_bytes(jsonl([TASK]))
    (tmp_path / "empty.jsonl").write_bytes(b"")
    for args in (
        ["filter", str(tmp_path / "g.jsonl"), "-o", str(null)],
        ["tasks", "import", str(tmp_path / "rows.jsonl"), "-o", str(null)],
        ["grade", str(tmp_path / "empty.jsonl"), "-o", str(null)],
    ):
        res = run_swerl(*args)
        assert res.returncode == 0, res.stderr.decode()
        assert stat.S_ISCHR(null.stat().st_mode), args
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_dev_stdout_writes_to_the_descriptor_and_is_never_replaced(tmp_path: Path) -> None:
    """Defect 1: `-o /dev/stdout` renamed a temp file over the link (as root)."""
    (tmp_path / "g.jsonl").write_bytes(jsonl([graded("a", 0, True)]))
    before = os.readlink("/dev/stdout")
    res = run_swerl("filter", str(tmp_path / "g.jsonl"), "-o", "/dev/stdout")
    assert res.returncode == 0, res.stderr.decode()
    assert [orjson.loads(line)["instance_id"] for line in res.stdout.splitlines()] == ["a"]
    assert os.readlink("/dev/stdout") == before


def test_full_device_is_one_line_no_space(tmp_path: Path) -> None:
    """Defect 1/8: /dev/full was replaced (as root) or reported nothing; now 'No space left' and exit 1."""
    (tmp_path / "g.jsonl").write_bytes(jsonl([graded("a", 0, True)]))
    res = run_swerl("filter", str(tmp_path / "g.jsonl"), "-o", "/dev/full")
    assert res.returncode == 1
    assert "/dev/full: cannot write: No space left on device" in _one_line(res)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_unwritable_output_directory_is_one_line(tmp_path: Path) -> None:
    """Defect 8: a read-only output directory gave a traceback."""
    (tmp_path / "g.jsonl").write_bytes(jsonl([graded("a", 0, True)]))
    res = run_swerl("filter", str(tmp_path / "g.jsonl"), "-o", "/sys/swerl-out.jsonl")  # sysfs: read-only for all
    assert res.returncode == 1
    assert "/sys/swerl-out.jsonl: cannot write:" in _one_line(res)


def test_grade_resume_trims_torn_line_and_counts_only_skipped(tmp_path: Path) -> None:
    """Defects 3 and 12: a torn last line stopped `grade --resume` with exit 3; the summary over-counted skips."""
    out = tmp_path / "g.jsonl"
    others = [_graded_pred(f"other{i}") for i in range(5)]  # in the output, not in this input
    out.write_bytes(jsonl([_graded_pred("m0"), _graded_pred("m1"), *others]) + b'{"id": "torn", "gra')
    res = run_swerl(*_grade_args(tmp_path, [_pred("m0"), _pred("m1")], out, "--resume"))
    assert res.returncode == 0, res.stderr.decode()
    assert "0 graded (2 skipped)" in res.stderr.decode()
    lines = out.read_bytes().splitlines(keepends=True)
    assert len(lines) == 7
    assert all(line.endswith(b"\n") and orjson.loads(line) for line in lines)


def test_grade_keeps_old_output_when_input_is_missing_or_bad(tmp_path: Path) -> None:
    """Defect 4: grade deleted -o before reading any input."""
    out = tmp_path / "g.jsonl"
    old = jsonl([_graded_pred("m0")])
    out.write_bytes(old)
    res = run_swerl("grade", str(tmp_path / "missing.jsonl"), "-o", str(out))
    _refused(res, 3, "missing.jsonl: no such file", out, old)
    args = _grade_args(tmp_path, [{"instance_id": IID, "model_name_or_path": 5}], out)
    res = run_swerl(*args)
    _refused(res, 3, "field 'model_name_or_path'", out, old)


def test_grade_refuses_its_own_input_as_output(tmp_path: Path) -> None:
    """Defect 4: `swerl grade x.jsonl -o x.jsonl` deleted its own input and exited 0."""
    x = tmp_path / "x.jsonl"
    data = jsonl([_graded_pred("m0")])
    x.write_bytes(data)
    res = run_swerl("grade", str(x), "-o", str(x))
    _refused(res, 2, "is also an input", x, data)


def test_filter_refuses_its_own_input_too(tmp_path: Path) -> None:
    """One rule for every command (issue 21): `filter x -o x` replaced its input; now it is refused, exit 2."""
    x = tmp_path / "x.jsonl"
    data = jsonl([graded("a", 0, True), graded("b", 0, False)])
    x.write_bytes(data)
    res = run_swerl("filter", str(x), "--resolved", "-o", str(x))
    _refused(res, 2, "is also an input", x, data)


@pytest.mark.parametrize("command", ["filter", "grade"])
def test_second_writer_of_an_output_is_refused(tmp_path: Path, command: str) -> None:
    """Defect 6: two runs on one -o duplicated or lost records; the second is now refused with one line."""
    out = tmp_path / "out.jsonl"
    old = jsonl([_graded_pred("m0")])
    out.write_bytes(old)
    (tmp_path / "g.jsonl").write_bytes(jsonl([graded("a", 0, True)]))
    args = ["filter", str(tmp_path / "g.jsonl"), "-o", str(out)] if command == "filter" else []
    args = args or _grade_args(tmp_path, [_pred("m0")], out, "--resume")
    fd = os.open(out, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what a first swerl run holds while it writes
        res = run_swerl(*args)
    finally:
        os.close(fd)
    _refused(res, 1, "another swerl run is writing this file", out, old)


@pytest.mark.parametrize("command", ["filter", "tasks import"])
def test_sigterm_leaves_no_temp_file_and_exits_143(tmp_path: Path, command: str) -> None:
    """Defect 11: SIGTERM during filter / tasks import left `.NAME.PID.tmp` behind."""
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    out = tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "swerl_cli", *command.split(), str(fifo), "-o", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
    with reap(proc), open(fifo, "wb") as feed:  # the command reads the first rows, then waits for more
        feed.write(jsonl([graded("a", 0, True)] if command == "filter" else [TASK]))
        feed.flush()
        deadline = time.monotonic() + 30
        while not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")], "the run never opened its temp file"
        proc.send_signal(signal.SIGTERM)
        _, err = finish(proc, 30)
    assert proc.returncode == 143, err.decode()
    assert "terminated by SIGTERM" in err.decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_append_output_resumes_whole_lines_and_fresh_run_empties_only_when_writing(tmp_path: Path) -> None:
    path = tmp_path / "o.jsonl"
    path.write_bytes(b'{"id": "a"}\n{"id": "b"}\n{"id": "c", "x": [1, 2')
    with open_output(str(path), "append", resume=True) as out:
        assert out.done_ids == {"a", "b"}
        assert [loc.obj["id"] for loc in out.previous()] == ["a", "b"]
        out.write({"id": "c"})
    assert [orjson.loads(line)["id"] for line in path.read_bytes().splitlines()] == ["a", "b", "c"]
    with pytest.raises(RuntimeError), open_output(str(path), "append"):
        raise RuntimeError("bad input found before the first record")
    assert path.read_bytes().count(b"\n") == 3  # nothing written yet: the old output stays
    with open_output(str(path), "append") as out:
        pass
    assert path.read_bytes() == b""  # a clean fresh run with no records: an empty output


def test_replace_output_keeps_old_file_on_failure_and_follows_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_bytes(b'{"old": 1}\n')
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)

    def interrupted() -> None:
        with open_output(str(link), "replace") as out:
            out.write({"new": 1})
            raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        interrupted()
    assert real.read_bytes() == b'{"old": 1}\n'
    with open_output(str(link), "replace") as out:
        out.write({"new": 1})
    assert link.is_symlink()
    assert real.read_bytes() == b'{"new":1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.jsonl", "real.jsonl"]


def test_output_usage_errors() -> None:
    with pytest.raises(UsageError, match="--resume needs -o FILE"):
        open_output(None, "append", resume=True)
    with pytest.raises(UsageError, match="--resume needs a regular file"), open_output("/dev/null", "append",
                                                                                        resume=True):  # fmt: skip
        pass
    with pytest.raises(OutputError, match="is a directory"), open_output("/tmp", "replace"):
        pass


def test_sigterm_blocked_by_the_launcher_still_stops_the_run_cleanly(tmp_path: Path) -> None:
    """A child inherits its parent's blocked signal mask: a launcher that blocked SIGTERM around its fork must not
    leave `swerl filter` deaf to it (the run would wait on its input forever, the temp file left behind)."""
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    cmd = [sys.executable, "-m", "swerl_cli", "filter", str(fifo), "-o", str(tmp_path / "out.jsonl")]

    def block() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP})

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), preexec_fn=block)
    with reap(proc), open(fifo, "wb") as feed:
        feed.write(jsonl([graded("a", 0, True)]))
        feed.flush()
        deadline = time.monotonic() + 30
        while not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")] and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = finish(proc, 30)
    assert proc.returncode == 143, err.decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
