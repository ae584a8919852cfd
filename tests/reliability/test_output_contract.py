"""Issue 21: one output contract for every command that writes (outputs.py, docs/reliability.md), `report` and
the training commands included, and the shape checks of check-template's and report's side inputs. Run as users
run swerl: the real entry point in a subprocess, real device nodes (mknod), FIFOs, symlinks and hard links."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_swerl
from tests.records import graded, jsonl
from tests.report.records import make_run


def _graded_file(tmp_path: Path) -> Path:
    src = tmp_path / "g.jsonl"
    src.write_bytes(jsonl([graded("a", 0, True), graded("a", 1, False)]))
    return src


def _one_error_line(res, command: str) -> str:
    err = res.stderr.decode()
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"swerl {command}: "), err
    return last


def test_report_to_a_device_node_writes_in_place(tmp_path: Path) -> None:
    """As root, `report -o /dev/null` renamed an HTML file over /dev/null. A private char device 1,3 (what
    /dev/null is) stands in for it here, so a regression cannot break the machine's /dev/null."""
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    res = run_swerl("report", str(_graded_file(tmp_path)), "-o", str(null))
    assert res.returncode == 0, res.stderr.decode()
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_report_to_a_fifo_writes_into_it(tmp_path: Path) -> None:
    fifo = tmp_path / "page.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    res = run_swerl("report", str(_graded_file(tmp_path)), "-o", str(fifo))
    reader.join(30)
    assert res.returncode == 0, res.stderr.decode()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got[0].startswith(b"<!DOCTYPE html>")


def test_report_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path: Path) -> None:
    """The rule of every command: a symlink is written through (its target replaced), the link itself stays."""
    target = tmp_path / "pages" / "real.html"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    res = run_swerl("report", str(_graded_file(tmp_path)), "-o", str(link))
    assert res.returncode == 0, res.stderr.decode()
    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    assert target.read_bytes().startswith(b"<!DOCTYPE html>")


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "in-run-dir"])
def test_report_refuses_its_own_input(tmp_path: Path, how: str) -> None:
    """`report x.jsonl -o x.jsonl` replaced its input with the page."""
    if how == "in-run-dir":
        run = make_run(tmp_path / "run", [[1, 0]])
        src, out = run, run / "iter-0" / "graded.jsonl"
    else:
        src = _graded_file(tmp_path)
        out = tmp_path / "o.html"
        if how == "same":
            out = src
        elif how == "symlink":
            out.symlink_to(src)
        else:
            os.link(src, out)
    before = out.read_bytes()
    res = run_swerl("report", str(src), "-o", str(out))
    assert res.returncode == 2
    assert "is also an input" in _one_error_line(res, "report")
    assert out.read_bytes() == before


def test_report_into_its_run_directory_can_be_written_again(tmp_path: Path) -> None:
    """`make paper-mini` writes RUN/report.html; every file under RUN counted as an input, so a resumed run (or a
    second `make paper-mini-report`) was refused at its last step with exit 2."""
    run = make_run(tmp_path / "run", [[1, 0], [2, 1]])
    out = run / "report.html"
    for _ in range(2):
        res = run_swerl("report", str(run), "-o", str(out))
        assert res.returncode == 0, res.stderr.decode()
        assert out.read_bytes().startswith(b"<!DOCTYPE html>")


@pytest.mark.parametrize(
    ("target", "needle"),
    [("dir", "is a directory, expected a file"), ("/sys/swerl-r.html", "Permission denied"),
     ("/dev/full", "No space left on device")],
)  # fmt: skip
def test_report_unwritable_output_is_one_line_exit_1(tmp_path: Path, target: str, needle: str) -> None:
    """Each was a traceback. /sys is read-only even for root (sysfs); /dev/full is a full disk."""
    if target == "dir":
        target = str(tmp_path / "dir")
        os.mkdir(target)
    res = run_swerl("report", str(_graded_file(tmp_path)), "-o", target)
    assert res.returncode == 1
    assert needle in _one_error_line(res, "report")


# Every command with an output flag, given one of its own inputs as that output.
OWN_INPUT = {
    "filter": ["filter", "{x}", "-o", "{x}"],
    "tasks import": ["tasks", "import", "{x}", "-o", "{x}"],
    "tasks pull": ["tasks", "pull", "{x}", "-o", "{x}"],
    "tasks validate": ["tasks", "validate", "{x}", "-o", "{x}"],
    "convert": ["convert", "{x}", "-o", "{x}"],
    "collect": ["collect", "{x}", "--policy", "gold", "-o", "{x}"],
    "grade": ["grade", "{x}", "-o", "{x}"],
    "grade --report": ["grade", "{x}", "-o", "{tmp}/out.jsonl", "--report", "{x}"],
    "grade --report -o": ["grade", "{x}", "-o", "{tmp}/out.jsonl", "--report", "{tmp}/out.jsonl"],
    "eval --plot": ["eval", "{x}", "--plot", "{x}"],
    "rft --metrics": ["rft", "{x}", "--model", "m", "-o", "{tmp}/ck", "--metrics", "{x}"],
    "dapo --metrics": ["dapo", "{x}", "--model", "m", "-o", "{tmp}/ck", "--metrics", "{x}"],
}


@pytest.mark.parametrize("name", sorted(OWN_INPUT))
@pytest.mark.parametrize("via", ["path", "symlink"])
def test_every_output_flag_refuses_its_own_input(tmp_path: Path, name: str, via: str) -> None:
    """`rft --metrics IN IN`, `grade --report IN`, `tasks pull -o IN`, `convert x -o x` overwrote their input and
    exited 0; `filter x -o x` replaced it. Now: exit 2, one line, the input byte for byte as it was."""
    x = tmp_path / "x.jsonl"
    x.write_bytes((EXAMPLES / "toy-tasks.jsonl").read_bytes())
    before = x.read_bytes()
    args = [a.format(x=x, tmp=tmp_path) for a in OWN_INPUT[name]]
    if via == "symlink":  # the output names the input through a symlink in another directory
        (tmp_path / "l").mkdir()
        (tmp_path / "l" / "x.jsonl").symlink_to(x)
        flag_at = len(args) - 1
        args[flag_at] = str(tmp_path / "l" / "x.jsonl") if args[flag_at] == str(x) else args[flag_at]
    res = run_swerl(*args, timeout=120)
    command = " ".join(name.split()[:2]) if name.startswith("tasks") else name.split()[0]
    assert res.returncode == 2, res.stderr.decode()
    assert "is also an input" in _one_error_line(res, command)
    assert x.read_bytes() == before
    assert not (tmp_path / "ck").exists()


def test_check_template_non_list_conversation_is_one_line(tmp_path: Path, tiny_model: Path) -> None:
    """A conversation that is an object, or a list with a non-object, was an AttributeError traceback."""
    cases = {
        '{"role": "user"}': "expected a JSON list of messages, got a JSON object",
        '[{"role": "user", "content": "x"}, 5]': "field '[1]': expected a message object, got a JSON number",
        '[{"role": "user", "content": ["x"]}]': "field '[0].content': expected a string, got a JSON array",
        '[{"content": "x"}]': "field '[0].role': missing",
    }
    for text, needle in cases.items():
        conv = tmp_path / "c.json"
        conv.write_text(text)
        res = run_swerl("check-template", str(tiny_model), "--conversation", str(conv))
        assert res.returncode == 3, text
        assert _one_error_line(res, "check-template") == f"swerl check-template: {conv}: {needle}"


@pytest.mark.parametrize(
    ("summary", "needle"),
    [
        ({"counts": [1, 2]}, "field 'counts': expected an object, got [1, 2]"),
        ({"steps": "many"}, "field 'steps': expected a number, got 'many'"),
        ({"timing": 5}, "field 'timing': expected an object, got 5"),
        ({"counts": {"groups": "3"}}, "field 'counts.groups': expected an integer, got '3'"),
        ({"config": ["l_thr"]}, "field 'config': expected an object, got ['l_thr']"),
    ],
)
def test_report_on_a_dapo_json_of_the_wrong_shape_is_one_line(tmp_path: Path, summary: dict, needle: str) -> None:
    run = make_run(tmp_path / "run", [[1, 0]])
    dapo = run / "iter-0" / "dapo.json"
    dapo.write_text(json.dumps(summary))
    res = run_swerl("report", str(run), "-o", str(tmp_path / "r.html"))
    assert res.returncode == 3
    assert _one_error_line(res, "report") == f"swerl report: {dapo}: {needle}"
    assert not (tmp_path / "r.html").exists()
