"""Issue 43, "The first hour of a new user": --help shows the defaults, tables keep repository names whole, and the
rft summary on a terminal is a table on stderr while stdout stays the record."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import run_swerl
from tests.records import graded, write_jsonl


def test_collect_help_shows_the_defaults_and_the_base_url_the_default_policy_needs() -> None:
    """It showed 5 `[default: ...]` markers in 106 lines: every config flag's default was hidden behind None."""
    res = run_swerl("collect", "--help")
    text = res.stdout.decode()
    assert res.returncode == 0
    assert text.count("[default: ") >= 30, text
    options: dict[str, str] = {}  # each option's whole entry, its wrapped lines joined
    name = ""
    for line in text.splitlines():
        if line.startswith("  -"):
            name = next(w for w in line.replace(",", " ").split() if w.startswith("--"))
            options[name] = line.strip()
        elif name and line.strip():
            options[name] += " " + line.strip()
    assert "[default: openai]" in options["--policy"]
    assert "needs --base-url" in options["--policy"]
    assert "required by the openai policy" in options["--base-url"]
    assert "[default: 1]" in options["--samples"]
    assert "[default: 4]" in options["--concurrency"]


def _options(command, path: list[str]):  # (command path, click option) of every command below `command`
    for name, sub in getattr(command, "commands", {}).items():
        yield from _options(sub, [*path, name])
    for param in getattr(command, "params", []):
        if hasattr(param, "show_default"):
            yield " ".join(path), command, param


def test_no_option_shows_its_default_twice() -> None:
    """Once --help showed every default, the help texts that wrote their own `[default: N]` showed it twice
    (`grade --workers`: `Sandboxes graded in parallel [default: 1]. [default: 1]`, 15 options in 5 commands)."""
    import click
    import typer

    from swerl_cli.cli import build

    twice = []
    for path, command, option in _options(typer.main.get_command(build()), []):
        record = option.get_help_record(click.Context(command, info_name=path))
        own = (option.help or "").count("[default:")  # convert --model-name names two defaults of its own
        if record and own and record[1].count("[default:") > own:
            twice.append(f"{path} {option.opts[0]}: {record[1]}")
        # `Top-k cut (default -1 = off). [default: -1]`: the same value in words and in the marker
        shown = f"[default: {option.default}]" if option.show_default is not False else ""
        if record and shown and shown in record[1] and f"default {option.default}" in (option.help or ""):
            twice.append(f"{path} {option.opts[0]}: {record[1]}")
    assert twice == []


def test_a_config_file_still_wins_over_a_default_that_help_shows(tmp_path: Path) -> None:
    """The defaults are shown, yet a flag left out is 'not given': the YAML file's value stands."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("samples: 0\n")  # invalid in the file: exit 3 naming it proves the file's value was used
    res = run_swerl("collect", "-", "--policy", "gold", "-c", str(cfg), input=b"")
    assert res.returncode == 3, res.stderr.decode()
    assert f"{cfg}: field 'samples'" in res.stderr.decode()


def test_eval_tables_keep_repository_names_and_run_labels_whole(tmp_path: Path) -> None:
    """Three runs side by side cut every name to `swerl-examples/b…` on an 80-column stderr."""
    repos = ["swerl-examples/bizdays", "swerl-examples/depsolve", "swerl-examples/wordwrap"]
    files = []
    for run in ("run-a-long-checkpoint-name-0", "run-b-long-checkpoint-name-1", "run-c-long-checkpoint-name-2"):
        rows = [graded(f"i{j}", 0, j % 2 == 0, repo=repos[j % 3], run=run) for j in range(6)]
        files.append(str(write_jsonl(tmp_path / f"{run}.jsonl", rows)))
    res = run_swerl("eval", *files, env={"COLUMNS": "80"})
    err = res.stderr.decode()
    assert res.returncode == 0, err
    assert "…" not in err, err
    for repo in repos:
        assert f"│ {repo} " in err, err


@pytest.mark.train
def test_rft_summary_on_a_terminal_is_a_table_and_stdout_stays_the_record(tiny_model: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from tests.training.fixtures import make_trajectory

    tok = AutoTokenizer.from_pretrained(tiny_model)
    data = write_jsonl(tmp_path / "runs.jsonl", [make_trajectory(tok, i) for i in range(2)])
    out = tmp_path / "ckpt"
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "100"}
    cmd = [sys.executable, "-m", "swerl_cli", "rft", str(data), "--model", str(tiny_model), "--output", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    stdout = proc.stdout.read() if proc.stdout else b""
    assert proc.wait(timeout=600) == 0
    os.close(master)
    err = b"".join(chunks).decode(errors="replace")
    for needle in ("swerl rft", "final loss", "checkpoint", "sequences"):
        assert needle in err, err[-3000:]
    assert '{"schema"' not in err
    record = orjson.loads(stdout)
    assert record["schema"] == "swerl.summary/1"
    assert record["checkpoint"] == str(out)
