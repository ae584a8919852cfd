"""`swerl convert` of harness log folders never follows a symlink nor reads a special file beside a report: a
`patch.diff` symlink to a host file, a FIFO as `test_output.txt`, a directory as `run_instance.log` are each one
error line naming the path (exit 4, every record still written, as if the file were absent); issue 43."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.conftest import run_swerl
from tests.convert.test_interop import FIX, SUMMARY

SECRET = "host secret: never in a record\n"


def _copy_logs(tmp_path: Path) -> Path:
    shutil.copytree(FIX / "logs", tmp_path / "logs")
    return tmp_path / "logs" / "run_evaluation" / "run-7" / "org__model-1"


def test_a_patch_diff_symlink_to_a_host_file_is_not_followed(tmp_path: Path) -> None:
    logs = _copy_logs(tmp_path)
    host = tmp_path / "outside" / "secret.txt"
    host.parent.mkdir()
    host.write_text(SECRET)
    diff = logs / "swerl-examples__memo-1" / "patch.diff"
    diff.unlink()
    diff.symlink_to(host)
    dangling = logs / "swerl-examples__bizdays-1" / "patch.diff"
    dangling.unlink()
    dangling.symlink_to(tmp_path / "nowhere")
    res = run_swerl("convert", str(SUMMARY), str(tmp_path / "logs"), timeout=120)
    err = res.stderr.decode().splitlines()
    assert res.returncode == 4, err
    assert SECRET.strip() not in res.stdout.decode()
    recs = {r["instance_id"]: r for r in map(json.loads, res.stdout.splitlines())}
    assert len(recs) == 4  # every instance still has its record
    assert recs["swerl-examples__memo-1"]["patch"] == ""  # as if there were no patch.diff
    assert recs["swerl-examples__memo-1"]["grade"]["status"] == "unresolved"
    why = "a symlink, not followed: a harness log file must be a regular file"
    assert f"swerl convert: {diff}: {why}" in err
    assert f"swerl convert: {dangling}: {why}" in err
    assert "Traceback" not in res.stderr.decode()


def test_special_files_beside_an_error_instance_are_not_read(tmp_path: Path) -> None:
    """A FIFO without a writer as test_output.txt (reading it blocked forever before) and a directory named
    patch.diff: one line each, and the instance keeps its log's verdict."""
    logs = _copy_logs(tmp_path)
    inst = logs / "swerl-examples__envcfg-1"  # an error_ids instance whose run_instance.log says apply failed
    os.mkfifo(inst / "test_output.txt")
    (inst / "patch.diff").unlink()
    (inst / "patch.diff").mkdir()
    out = tmp_path / "strict.jsonl"
    res = run_swerl("convert", "--strict", str(SUMMARY), str(tmp_path / "logs"), "-o", str(out), timeout=60)
    assert res.returncode == 3, res.stderr.decode()
    assert not out.exists()  # --strict: the first bad file stops the run, -o untouched
    res = run_swerl("convert", str(SUMMARY), str(tmp_path / "logs"), timeout=60)
    err = res.stderr.decode().splitlines()
    assert res.returncode == 4, err
    recs = {r["instance_id"]: r for r in map(json.loads, res.stdout.splitlines())}
    assert recs["swerl-examples__envcfg-1"]["grade"]["status"] == "patch_failed"
    regular = "a harness log file must be a regular file"
    assert f"swerl convert: {inst / 'patch.diff'}: a directory, not read: {regular}" in err
    # the FIFO is read only when the log does not already decide: a timeout instance whose output is a FIFO
    (inst / "run_instance.log").write_text("2026-11-20 10:00:00,000 - INFO - Container for x created\n")
    res = run_swerl("convert", str(SUMMARY), str(tmp_path / "logs"), timeout=60)
    err = res.stderr.decode().splitlines()
    assert res.returncode == 4, err
    assert f"swerl convert: {inst / 'test_output.txt'}: a FIFO, not read: {regular}" in err
    recs = {r["instance_id"]: r for r in map(json.loads, res.stdout.splitlines())}
    assert recs["swerl-examples__envcfg-1"]["grade"]["status"] == "error"
