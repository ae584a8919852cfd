"""`eval --plot` (issue 43): the plot is replaced whole (a full disk left the old one truncated: savefig wrote in
place), and the file written is the one named (`--plot DIR/` wrote `DIR/.png`, `--plot DIR` wrote `DIR.png`)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_swerl
from tests.records import graded, jsonl

pytest.importorskip("matplotlib")

PNG = b"\x89PNG\r\n\x1a\n"


def _graded(tmp_path: Path) -> Path:
    src = tmp_path / "g.jsonl"
    src.write_bytes(jsonl([graded("a", s, s % 2 == 0) for s in range(3)] + [graded("b", 0, True)]))
    return src


def test_plot_on_a_full_disk_keeps_the_old_plot_whole(tmp_path: Path) -> None:
    """A 8 KiB file size limit (`ulimit -f`: EFBIG, as a full disk gives ENOSPC) stops the ~28 KB plot midway."""
    src = _graded(tmp_path)
    plot = tmp_path / "p.png"
    old = PNG + b"an older plot" * 4000  # 52 KB, above the limit: only a rename can put it back
    plot.write_bytes(old)
    cmd = shlex.join([sys.executable, "-m", "swerl_cli", "eval", str(src), "--plot", str(plot)])
    res = subprocess.run(["bash", "-c", f"ulimit -f 8 && {cmd}"], capture_output=True, timeout=300)
    err = res.stderr.decode()
    assert res.returncode == 1, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"swerl eval: {plot}: cannot write: File too large"
    assert plot.read_bytes() == old  # before: the first 8 KiB of the new plot
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.jsonl", "p.png"]  # no temporary file left


@pytest.mark.parametrize("slash", ["/", ""])
def test_plot_into_a_directory_is_refused_before_reading(tmp_path: Path, slash: str) -> None:
    plots = tmp_path / "plots"
    plots.mkdir()
    res = run_swerl("eval", str(tmp_path / "missing.jsonl"), "--plot", f"{plots}{slash}")
    assert res.returncode == 2
    assert res.stderr.decode().splitlines() == [f"swerl eval: --plot {plots}{slash}: is a directory; give a file name"]
    assert list(plots.iterdir()) == []  # before: plots/.png
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plots"]  # and not plots.png


def test_plot_writes_the_file_named_in_the_format_of_its_suffix(tmp_path: Path) -> None:
    src = _graded(tmp_path)
    res = run_swerl("eval", str(src), "--plot", str(tmp_path / "curve"), "--json")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "curve").read_bytes()[:8] == PNG  # no suffix: PNG, under the name given (not curve.png)
    assert not (tmp_path / "curve.png").exists()
    res = run_swerl("eval", str(src), "--plot", str(tmp_path / "curve.svg"), "--json")
    assert res.returncode == 0, res.stderr
    assert b"<svg" in (tmp_path / "curve.svg").read_bytes()[:1000]
    res = run_swerl("eval", str(src), "--plot", str(tmp_path / "curve.txt"))
    assert (res.returncode, res.stdout) == (2, b"")
    (line,) = res.stderr.decode().splitlines()
    assert line.startswith(f"swerl eval: --plot {tmp_path / 'curve.txt'}: cannot write a .txt image; use one of ")
    assert ".png" in line
    assert not (tmp_path / "curve.txt").exists()
