"""Issue 21, the matrix of hostile invocations: closed stdin/stdout, non-finite flags and config values, hostile
YAML and deep `--where` expressions, on every command that reads input. Each case: one stderr line, the documented
exit code, no traceback (docs/reliability.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

SWERL = [sys.executable, "-m", "swerl_cli"]

# Every command that reads records from stdin (`-` or no input), with the flags it needs to get that far.
STDIN_READERS = {
    "filter": ["filter"],
    "eval": ["eval"],
    "grade": ["grade", "-"],
    "collect": ["collect", "-", "--policy", "gold"],
    "tasks import": ["tasks", "import", "-"],
    "tasks validate": ["tasks", "validate", "-"],
    "tasks build": ["tasks", "build", "-"],
    "tasks pull": ["tasks", "pull", "-"],
    "report": ["report", "-", "-o", "{tmp}/r.html"],
    "convert": ["convert", "-"],
    "rft": ["rft", "-", "--model", "{model}", "-o", "{tmp}/ck"],
    "dapo": ["dapo", "-", "--model", "{model}", "-o", "{tmp}/ck"],
}
# Every command that writes records to stdout (no -o), reading a file.
STDOUT_WRITERS = {
    "filter": ["filter", "{tasks}"],
    "tasks import": ["tasks", "import", "{tasks}"],
    "convert": ["convert", "{tasks}"],
    "grade": ["grade", "{graded}", "--sandbox", "local", "--repo-dir", "{tmp}"],
    "collect": ["collect", "{tasks}", "--policy", "gold", "--sandbox", "local", "--repo-dir", "{tmp}"],
    "eval": ["eval", "{graded}", "--json"],
}


def _sh(cmd: list[str], redirect: str, tmp: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run swerl through a real shell with `redirect` (`<&-`, `>&-`); returns (exit code, stderr)."""
    quoted = " ".join(f"'{a}'" for a in cmd)
    proc = subprocess.run(
        ["bash", "-c", f"exec {quoted} {redirect}"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL if ">" not in redirect else None,
        env={**os.environ, **(env or {})},
        cwd=tmp,
        timeout=120,
    )
    return proc.returncode, proc.stderr.decode()


def _fill(args: list[str], tmp: Path, model: Path | None = None) -> list[str]:
    graded = tmp / "graded.jsonl"
    if not graded.exists():
        graded.write_text(
            '{"schema": "swerl.graded/1", "id": "a#0", "instance_id": "a", "sample": 0, '
            '"grade": {"status": "resolved", "resolved": true, "reward": 1.0}}\n'
        )
    subst = {"tmp": str(tmp), "model": str(model), "tasks": str(EXAMPLES / "toy-tasks.jsonl"), "graded": str(graded)}
    return [a.format(**subst) for a in args]


@pytest.mark.parametrize("name", sorted(STDIN_READERS))
def test_closed_stdin_is_one_line_exit_2(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Was an AttributeError traceback ('NoneType' object has no attribute 'buffer') in every reading command."""
    model = request.getfixturevalue("tiny_model") if name in ("rft", "dapo") else None
    code, err = _sh([*SWERL, *_fill(STDIN_READERS[name], tmp_path, model)], "<&-", tmp_path)
    lines = [ln for ln in err.splitlines() if ln.startswith("swerl ") or "Traceback" in ln or "Error" in ln]
    assert "Traceback" not in err, err
    assert code == 2, err
    assert lines == [f"swerl {name}: stdin is closed: pipe records in or name an input FILE"], err


@pytest.mark.parametrize("name", sorted(STDOUT_WRITERS))
def test_closed_stdout_is_one_line_exit_2(name: str, tmp_path: Path) -> None:
    code, err = _sh([*SWERL, *_fill(STDOUT_WRITERS[name], tmp_path)], ">&-", tmp_path)
    assert "Traceback" not in err, err
    assert code == 2, err
    assert err.strip().splitlines()[-1] == f"swerl {name}: stdout is closed: redirect it or write to a file with -o"


def test_closed_stdout_with_o_file_still_works(tmp_path: Path) -> None:
    """A closed stdout only matters to a command that writes to it; a file opened by the run never becomes fd 1."""
    out = tmp_path / "o.jsonl"
    code, err = _sh([*SWERL, "filter", str(EXAMPLES / "toy-tasks.jsonl"), "-o", str(out)], ">&- <&-", tmp_path)
    assert code == 0, err
    assert out.read_bytes() == (EXAMPLES / "toy-tasks.jsonl").read_bytes()


def test_closed_stdin_with_debug_keeps_the_traceback(tmp_path: Path) -> None:
    code, err = _sh([*SWERL, "filter"], "<&-", tmp_path, env={"SWERL_DEBUG": "1"})
    assert code != 0
    assert "Traceback" in err
    assert "stdin is closed" in err


# Every float flag of every command (cli/*.py), with a value that is not a finite number.
FLOAT_FLAGS = [
    ["collect", "-", "--temperature", "nan"],
    ["collect", "-", "--top-p", "nan"],
    ["collect", "-", "--min-p", "inf"],
    ["collect", "-", "--repetition-penalty", "nan"],
    ["collect", "-", "--command-timeout-s", "inf"],
    ["collect", "-", "--episode-timeout-s", "nan"],
    ["collect", "-", "--request-timeout-s", "nan"],
    ["collect", "-", "--gpu-memory-utilization", "nan"],
    ["collect", "-", "--episode-cpus", "nan"],
    ["collect", "-", "--episode-memory-gb", "inf"],
    ["grade", "-", "--timeout-s", "nan"],
    ["grade", "-", "--cpus", "inf"],
    ["grade", "-", "--episode-cpus", "-inf"],
    ["tasks", "validate", "-", "--timeout-s", "nan"],
    ["tasks", "mine", "x", "--timeout-s", "nan"],
    ["rft", "-", "--lr", "nan"],
    ["rft", "-", "--weight-decay", "inf"],
    ["dapo", "-", "--lr", "nan"],
    ["dapo", "-", "--eps-low", "nan"],
    ["dapo", "-", "--eps-high", "inf"],
    ["dapo", "-", "--adv-delta", "nan"],
    ["dapo", "-", "--weight-decay", "nan"],
    ["dapo", "-", "--grad-clip", "inf"],
    ["dapo", "-", "--stale-decay", "nan"],
    ["dapo", "-", "--idle-timeout", "inf"],  # field idle_timeout_s: the message names the flag
    ["filter", "--min-reward", "nan"],
]


@pytest.mark.parametrize("args", FLOAT_FLAGS, ids=lambda a: "-".join(a[:1] + a[-2:]))
def test_non_finite_float_flag_is_usage_error(args: list[str]) -> None:
    """`collect --temperature nan` was a traceback mid-episode, `rft --lr nan` one from torch."""
    proc = subprocess.run([*SWERL, *args], capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
    err = proc.stderr.decode().strip()
    assert proc.returncode == 2, err
    name = " ".join(args[:2]) if args[0] == "tasks" else args[0]
    assert err.splitlines() == [f"swerl {name}: {args[-2]}: must be a finite number; got {float(args[-1])}"]


@pytest.mark.parametrize(
    ("cmd", "yaml_text", "field"),
    [
        (["collect", "-"], "temperature: .nan\n", "temperature"),
        (["grade", "-"], "timeout_s: .inf\n", "timeout_s"),
        (["dapo", "-", "--model", "m", "-o", "o"], "lr: .NaN\n", "lr"),
        (["rft", "-", "--model", "m", "-o", "o"], "weight_decay: -.inf\n", "weight_decay"),
    ],
)
def test_non_finite_config_value_is_exit_3_naming_file_and_field(
    cmd: list[str], yaml_text: str, field: str, tmp_path: Path
) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml_text)
    proc = subprocess.run([*SWERL, *cmd, "-c", str(cfg)], capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
    err = proc.stderr.decode().strip()
    assert proc.returncode == 3, err
    assert len(err.splitlines()) == 1, err
    assert f"{cfg}: field '{field}': must be a finite number" in err


def test_huge_config_value_is_echoed_cut(tmp_path: Path) -> None:
    """A 38 KB bad value was echoed whole: a 38 KB error line."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("workers: " + "x" * 38_000 + "\n")
    proc = subprocess.run([*SWERL, "grade", "-", "-c", str(cfg)], capture_output=True, stdin=subprocess.DEVNULL)
    err = proc.stderr.decode().strip()
    assert proc.returncode == 3
    assert len(err) < 300, len(err)
    assert err.startswith(f"swerl grade: {cfg}: field 'workers': expected int, got 'xxx")
    assert err.endswith("(38002 characters)")


def test_yaml_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    """A billion-laughs config (9 levels of 9 aliases) hung every command reading it."""
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    cfg = tmp_path / "bomb.yaml"
    cfg.write_text("\n".join([*lines, "workers: *i"]) + "\n")
    t0 = time.monotonic()
    proc = subprocess.run([*SWERL, "grade", "-", "-c", str(cfg)], capture_output=True, stdin=subprocess.DEVNULL,
                          timeout=60)  # fmt: skip
    assert time.monotonic() - t0 < 30
    assert proc.returncode == 3
    assert proc.stderr.decode().strip() == (
        f"swerl grade: {cfg}: its YAML aliases expand to more than 100,000 values (an alias bomb?); "
        "write the values out"
    )


def test_a_few_yaml_aliases_still_work(tmp_path: Path) -> None:
    from swerl_cli.core.config import load_yaml

    cfg = tmp_path / "c.yaml"
    cfg.write_text("base: &b {workers: 2}\nother: *b\nlist: [*b, *b]\n")
    assert load_yaml(cfg) == {"base": {"workers": 2}, "other": {"workers": 2}, "list": [{"workers": 2}] * 2}


@pytest.mark.parametrize(
    "where",
    [
        "(" * 5000 + "true" + ")" * 5000,
        "not " * 5000 + "false",
        "x in " + "[" * 5000 + "]" * 5000,
    ],
    ids=["parens", "not", "lists"],
)
def test_deeply_nested_where_is_one_line_naming_the_flag(where: str) -> None:
    """Was a RecursionError traceback; the echoed expression is cut too."""
    proc = subprocess.run([*SWERL, "filter", "--where", where], input=b'{"id": "a"}\n', capture_output=True)
    err = proc.stderr.decode().strip()
    assert proc.returncode == 2, err  # a bad flag value: usage (issue 43)
    assert err.startswith("swerl filter: --where: column ")
    assert "nested more than 100 levels deep" in err
    assert len(err) < 400


def test_long_flat_where_chain_still_works() -> None:
    """Flat `or` chains are not nesting: 5,000 alternatives compile and match."""
    where = " or ".join(f"x == {i}" for i in range(5000))
    proc = subprocess.run([*SWERL, "filter", "--where", where], input=b'{"x": 4999}\n{"x": 5000}\n',
                          capture_output=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == b'{"x": 4999}\n'


@pytest.mark.parametrize(
    "shell",
    [
        "{swerl} filter x.jsonl >> x.jsonl",
        "{swerl} filter < x.jsonl >> x.jsonl",
        "{swerl} tasks import x.jsonl >> x.jsonl",
        "{swerl} convert x.jsonl >> x.jsonl",
        "{swerl} convert - < x.jsonl >> x.jsonl",
        "{swerl} grade x.jsonl >> x.jsonl",
        "{swerl} grade < x.jsonl >> x.jsonl",
        "{swerl} collect x.jsonl --policy gold >> x.jsonl",
    ],
)
def test_stdout_appending_to_the_input_is_refused(shell: str, tmp_path: Path) -> None:
    """`swerl filter x >> x` read the records it appended, without end (a file growing until the disk was full)."""
    x = tmp_path / "x.jsonl"
    x.write_bytes((EXAMPLES / "toy-tasks.jsonl").read_bytes())
    before = x.read_bytes()
    cmd = shell.format(swerl=" ".join(SWERL))
    proc = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, capture_output=True, timeout=60)
    err = proc.stderr.decode().strip()
    assert proc.returncode == 2, err
    assert err.endswith("it would read what it writes; redirect to another file"), err
    assert len(err.splitlines()) == 1
    assert x.read_bytes() == before
