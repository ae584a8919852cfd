"""Issue 43: inputs and outputs that cannot work end in one stderr line and the documented code, not a traceback, a
process killed for memory or a half-written checkpoint: a line without end (/dev/zero), `tasks synth -o` on a file,
FIFO or device, and a full disk under `rft -o`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_swerl
from tests.reliability.test_round3_refusals import _refused

LIMIT = "line longer than 268435456 bytes (the limit; SWERL_MAX_LINE_BYTES raises it)"


@pytest.mark.parametrize("command", ["filter", "eval", "grade"])
def test_a_line_without_end_is_one_line_at_the_documented_limit(command: str) -> None:
    """`for line in fh` read /dev/zero until the kernel killed the process (exit 137)."""
    res = run_swerl(command, "/dev/zero", timeout=120)
    _refused(res, command, 3, f"/dev/zero:1: cannot read: {LIMIT}")


def test_the_limit_applies_to_stdin_and_to_filters_spooled_stdin() -> None:
    """A group rule spools stdin to read it twice: that copy is bounded too."""
    with open("/dev/zero", "rb") as zero:
        for extra in ([], ["--per-task", "1"]):
            res = subprocess.run(
                [sys.executable, "-m", "swerl_cli", "filter", *extra], stdin=zero, capture_output=True, timeout=120
            )
            _refused(res, "filter", 3, f"<stdin>:1: cannot read: {LIMIT}")


def test_the_limit_can_be_raised_or_lowered_by_environment(tmp_path: Path) -> None:
    src = tmp_path / "g.jsonl"
    src.write_bytes(b'{"id": "a", "pad": "' + b"x" * 5000 + b'"}\n')
    res = run_swerl("filter", str(src), env={"SWERL_MAX_LINE_BYTES": "1000"})
    _refused(res, "filter", 3, f"{src}:1: cannot read: line longer than 1000 bytes")
    assert run_swerl("filter", str(src)).returncode == 0


@pytest.mark.parametrize(
    ("target", "what"), [("fifo", "a FIFO"), ("file", "a file"), ("/dev/null", "a character device")]
)
def test_tasks_synth_out_that_is_not_a_directory_is_one_line_exit_2(tmp_path: Path, target: str, what: str) -> None:
    """`mkdir(exist_ok=True)` raised FileExistsError: a traceback."""
    out = Path(target) if target.startswith("/") else tmp_path / target
    if target == "fifo":
        os.mkfifo(out)
    elif target == "file":
        out.write_text("keep me\n")
    res = run_swerl("tasks", "synth", str(ROOT / "examples" / "repos" / "memo"), "-o", str(out))
    _refused(res, "tasks synth", 2, f"--out {out}: is {what}, not a directory")
    if target == "file":
        assert out.read_text() == "keep me\n"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[tuple[Path, list[str]]]:
    """A 600 KiB file system (tmpfs, when this process may mount one), else a 600 KiB file size limit (`ulimit -f`,
    EFBIG instead of ENOSPC): the tiny model's weights (~800 KB) do not fit either way."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode == 0:
        yield disk, []
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
    else:
        yield disk, ["ulimit -f 600 &&"]


@pytest.mark.train
def test_rft_on_a_full_disk_leaves_no_partial_and_says_so(
    tiny_model: Path, tmp_path: Path, small_disk: tuple[Path, list[str]]
) -> None:
    """It ended in a SafetensorError traceback and left OUTPUT.partial filling the disk."""
    from transformers import AutoTokenizer

    from tests.training.fixtures import make_trajectory, write_jsonl

    tok = AutoTokenizer.from_pretrained(tiny_model)
    data = write_jsonl(tmp_path / "runs.jsonl", [make_trajectory(tok, i) for i in range(2)])
    disk, prefix = small_disk
    out = disk / "ckpt"
    cmd = [sys.executable, "-m", "swerl_cli", "rft", str(data), "--model", str(tiny_model), "--output", str(out)]
    quoted = " ".join(f"'{c}'" for c in cmd)
    res = subprocess.run(["bash", "-c", " ".join([*prefix, quoted])], capture_output=True, timeout=600)
    err = res.stderr.decode()
    assert "Traceback" not in err, err[-3000:]
    assert res.returncode == 1, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"swerl rft: --output {out}: cannot write the checkpoint: "), last
    assert last.endswith("ckpt.partial removed, ckpt unchanged"), last
    assert res.stdout == b""
    assert sorted(p.name for p in disk.iterdir()) == []
    shutil.rmtree(disk, ignore_errors=True)
