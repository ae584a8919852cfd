"""Defects 7-10: one stderr line and the documented exit code, never a traceback or a silent rewrite."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from swerl_cli.cli import app
from tests.conftest import EXAMPLES, run_swerl
from tests.records import graded, jsonl

TASK = orjson.loads((EXAMPLES / "toy-tasks.jsonl").read_bytes().splitlines()[0])


def _run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args))
    err = res.stderr.strip()
    assert "Traceback" not in err, err
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert len(err.splitlines()) <= 1 or res.exit_code == 0, err
    return res.exit_code, res.stdout, err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["grade", "-", "--timeout-s", "nan"], "--timeout-s: must be a finite number; got nan"),
        (["grade", "-", "--timeout-s", "0"], "field 'timeout_s': must be a finite number > 0; got 0"),
        (["grade", "-", "--sandbox", "bogus"], "'bogus' is not one of docker, podman, local"),
        (["collect", "-", "--sandbox", "bogus"], "'bogus' is not one of docker, podman, local"),
        (["collect", "-", "--command-timeout-s", "0"], "field 'command_timeout_s'"),
        (["collect", "-", "--episode-timeout-s", "-1"], "field 'episode_timeout_s'"),
        (["collect", "-", "--max-retries", "-1"], "field 'max_retries'"),
        (["collect", "-", "--resume"], "--resume needs -o FILE"),
    ],
)
def test_bad_flag_values_are_usage_errors_exit_2(args: list[str], needle: str) -> None:
    """Defect 10: these were accepted (or exited 3 while docs/cli.md says bad flags exit 2)."""
    code, out, err = _run(*args)
    assert code == 2
    assert needle in err
    assert out == ""


def test_bad_value_in_a_config_file_is_exit_3_naming_the_file(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("command_timeout_s: 0\n")
    code, _, err = _run("collect", "-", "-c", str(cfg))
    assert code == 3
    assert err.startswith(f"swerl collect: {cfg}: field 'command_timeout_s'")


@pytest.mark.parametrize(
    ("content", "needle"),
    [(None, "is a directory"), (b"workers: 2\n\xff\xfe\n", "not UTF-8 text")],
)
def test_config_file_that_cannot_be_read_is_one_line(tmp_path: Path, content: bytes | None, needle: str) -> None:
    """Defect 8: a config file that is a directory or not UTF-8 gave a traceback."""
    cfg = tmp_path / "c.yaml"
    cfg.mkdir() if content is None else cfg.write_bytes(content)
    code, _, err = _run("grade", "-", "-c", str(cfg))
    assert code == 3
    assert needle in err


def test_eval_plot_into_a_missing_directory_is_written(tmp_path: Path) -> None:
    """Defect 8: `eval --plot` into a missing directory gave a traceback; like -o, the directory is created."""
    pytest.importorskip("matplotlib")
    src = tmp_path / "g.jsonl"
    src.write_bytes(jsonl([graded("a", 0, True), graded("a", 1, False)]))
    code, _, err = _run("eval", str(src), "--plot", str(tmp_path / "new" / "dir" / "p.png"))
    assert code == 0, err
    assert (tmp_path / "new" / "dir" / "p.png").read_bytes()[:4] == b"\x89PNG"
    res = CliRunner().invoke(app, ["eval", str(src), "--plot", "/sys/swerl-plot.png"])  # tables first, then this
    assert res.exit_code == 1
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1] == "swerl eval: /sys/swerl-plot.png: cannot write: Permission denied"


def test_unknown_schema_version_is_rejected_by_collect_and_tasks_import(tmp_path: Path) -> None:
    """Defect 9: collect accepted swerl.task/9 and `tasks import` rewrote it to /1."""
    src = tmp_path / "t.jsonl"
    src.write_bytes(jsonl([TASK, {**TASK, "schema": "swerl.task/9"}]))
    out = tmp_path / "out.jsonl"
    for args in (
        ["collect", str(src), "--policy", "gold", "-o", str(out)],
        ["tasks", "import", str(src), "-o", str(out)],
    ):
        code, _, err = _run(*args)
        assert code == 3, args
        assert f"{src}:2: field 'schema': unsupported version 9 of swerl.task" in err
        assert not out.exists()


def test_dapo_refuses_a_non_checkpoint_output_directory(tmp_path: Path) -> None:
    """Defect 7: `dapo -o DIR` deleted any existing directory."""
    mine = tmp_path / "my-notes"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    src = tmp_path / "g.jsonl"
    src.write_bytes(jsonl([graded("a", 0, True)]))
    code, _, err = _run("dapo", str(src), "--model", str(tmp_path / "m"), "-o", str(mine))
    assert code == 2
    assert "not a swerl checkpoint" in err
    assert "--overwrite" in err
    assert (mine / "thesis.tex").read_text() == "years of work"


def test_collect_output_into_a_missing_directory_is_created(tmp_path: Path) -> None:
    """Defect 8: `collect -o new/dir/t.jsonl` gave a traceback (the file was opened before anything made the dir)."""
    (tmp_path / "none.jsonl").write_bytes(b"")
    out = tmp_path / "new" / "dir" / "t.jsonl"
    code, _, err = _run("collect", str(tmp_path / "none.jsonl"), "--policy", "gold", "-o", str(out))
    assert code == 0, err
    assert out.read_bytes() == b""


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["grade", "--bogus"], "swerl grade: No such option: --bogus"),
        (["grade", "--workers", "abc"], "swerl grade: Invalid value for '--workers': Input should be a valid integer"),
        (["check-template"], "swerl check-template: Missing argument 'model'."),
        (["collect", "t.jsonl", "--network", "none"], "swerl collect: Got unexpected extra argument(s) (none)"),
        (["nosuch"], "swerl: No such command 'nosuch'."),
    ],
)
def test_a_usage_error_click_finds_is_one_line_exit_2(args: list[str], line: str) -> None:
    """An unknown flag or command, a value of the wrong type, a missing argument: click printed four lines (usage,
    a hint, a blank line, `Error: ...`); now one, as the commands' own usage errors, through the real entry point."""
    res = run_swerl(*args)
    assert (res.returncode, res.stdout) == (2, b"")
    (got,) = res.stderr.decode().splitlines()
    assert got.startswith(line), got
    assert got.endswith("--help)"), got  # where to look: (see swerl grade --help)


def test_help_version_and_a_bare_group_keep_their_output_and_codes() -> None:
    assert run_swerl("--version").stdout.decode().startswith("swerl ")
    res = run_swerl("grade", "--help")
    assert (res.returncode, res.stderr) == (0, b"")
    assert res.stdout.decode().startswith("Usage: swerl grade")
    res = run_swerl("tasks")  # a group without its command: its help on stderr, exit 2 (click's rule)
    assert res.returncode == 2
    assert res.stderr.decode().startswith("Usage: swerl tasks")
