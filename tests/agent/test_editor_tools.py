"""The in-sandbox editor tools against files in a real container (the toy example task's image)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from swerl_cli.agent.loop import AgentSettings, prepare_sandbox
from swerl_cli.agent.tools import STATE_COMMAND, parse_state
from swerl_cli.streams.jsonl import read_records
from swerl_cli.streams.records import Task
from tests.sandbox.engines import DOCKER

pytestmark = pytest.mark.docker
TOY = Path(__file__).resolve().parents[2] / "examples" / "toy-tasks.jsonl"


@pytest.fixture(scope="module")
def box():
    from swerl_cli.sandbox import open_sandbox

    task = Task.from_json(next(read_records(str(TOY))))
    with open_sandbox(task, DOCKER, run_id="test-agent-tools") as sb:
        asyncio.run(prepare_sandbox(sb, AgentSettings(window=5)))
        sb.write_file("/tmp/ed/f.py", "".join(f"line{i}\n" for i in range(1, 13)))
        yield sb


def run(sb, cmd: str) -> str:
    res = sb.run(cmd, 30)
    return res.output


def reset(sb) -> None:
    sb.write_file("/tmp/ed/f.py", "".join(f"line{i}\n" for i in range(1, 13)))


def test_open_shows_numbered_window_and_goto_moves_it(box):
    reset(box)
    out = run(box, "cd /tmp/ed && open f.py")
    assert out.splitlines()[:3] == ["[File: /tmp/ed/f.py (12 lines total)]", "1:line1", "2:line2"]
    assert "(7 more lines below)" in out
    out = run(box, "goto 10")
    assert "(7 more lines above)" in out
    assert "10:line10" in out
    assert "12:line12" in out
    assert "Current" not in out  # the prompt line is the scaffold's job, not the tool's
    assert "scroll" not in run(box, "scroll_up")


def test_edit_with_heredoc_replaces_the_line_range(box):
    box.write_file("/tmp/ed/f.txt", "".join(f"line{i}\n" for i in range(1, 13)))  # not Python: no syntax check
    run(box, "open /tmp/ed/f.txt")
    out = run(box, "edit 2:3 << 'EOF'\n    indented = 1\nnew three\nEOF")
    assert out.startswith("File updated.")
    text = box.read_file("/tmp/ed/f.txt").decode()
    assert text.splitlines()[:4] == ["line1", "    indented = 1", "new three", "line4"]


MOD = "def f(x):\n    if x:\n        return 1\n    return 2\n"


def test_an_edit_that_breaks_python_syntax_is_refused_and_the_file_kept(box):
    box.write_file("/tmp/ed/m.py", MOD)
    res = box.run("edit --file /tmp/ed/m.py 2:2 '        if x:'", 30)
    assert res.exit_code == 1
    assert res.output.startswith("Your proposed edit has introduced new syntax error(s).")
    assert "- E999 IndentationError: expected an indented block after 'if' statement on line 2 (line 3)" in res.output
    would, was = res.output.split("It still reads")
    assert "2:        if x:" in would
    assert "2:    if x:" in was
    assert "NOT applied" in was
    assert box.read_file("/tmp/ed/m.py").decode() == MOD
    res = box.run("replace --file /tmp/ed/m.py 'return 1' 'return (1'", 30)
    assert res.exit_code == 1
    assert "- E999 SyntaxError: '(' was never closed (line 3)" in res.output
    assert box.read_file("/tmp/ed/m.py").decode() == MOD
    out = run(box, "edit --file /tmp/ed/m.py 2:2 '    if not x:'")  # a correct edit goes through
    assert out.startswith("File updated.")
    assert box.read_file("/tmp/ed/m.py").decode() == MOD.replace("if x", "if not x")


def test_the_syntax_check_can_be_off_and_never_judges_a_file_that_did_not_compile(box):
    box.write_file("/tmp/ed/m.py", MOD)
    out = run(box, "SWERL_EDIT_CHECK=off edit --file /tmp/ed/m.py 2:2 '        if x:'")
    assert out.startswith("File updated.")
    broken = box.read_file("/tmp/ed/m.py").decode()
    assert broken == MOD.replace("    if x", "        if x")
    out = run(box, "edit --file /tmp/ed/m.py 4:4 '    return (2'")  # already broken: applied, as before
    assert out.startswith("File updated.")
    assert box.read_file("/tmp/ed/m.py").decode().endswith("    return (2\n")


def test_the_episode_exports_the_configured_check():
    from swerl_cli.agent.tools import setup_command

    assert "SWERL_EDIT_CHECK=syntax " in setup_command(9)
    assert "SWERL_EDIT_CHECK=off " in setup_command(9, "off")


def test_single_line_quoted_edit_with_file_flag_and_insert(box):
    reset(box)
    run(box, "edit --file /tmp/ed/f.py 1:1 \"first = 'x'\"")
    run(box, 'edit --file /tmp/ed/f.py 2:1 "inserted"')
    lines = box.read_file("/tmp/ed/f.py").decode().splitlines()
    assert lines[:3] == ["first = 'x'", "inserted", "line2"]
    assert len(lines) == 13


def test_edit_out_of_range_is_an_error_and_changes_nothing(box):
    reset(box)
    run(box, "open /tmp/ed/f.py")
    out = run(box, "edit 14:14 'x'")
    assert out.startswith("Error: START must be between 1 and 13")
    out = run(box, "edit 5:20 'x'")
    assert out.startswith("Error: END must be between 4 and 12")
    assert run(box, "goto 99").startswith("Error: LINE_NUMBER must be between 1 and 12")
    assert box.read_file("/tmp/ed/f.py").decode() == "".join(f"line{i}\n" for i in range(1, 13))


def test_replace_needs_unique_text_unless_replace_all(box):
    box.write_file("/tmp/ed/r.py", "a = 1\nb = a + a\n")
    run(box, "open /tmp/ed/r.py")
    out = run(box, 'replace "a" "z"')
    assert "occurs 3 times" in out
    assert box.read_file("/tmp/ed/r.py").decode() == "a = 1\nb = a + a\n"
    out = run(box, 'replace --replace-all "a" "z"')
    assert out.startswith("Replaced 3 occurrence(s).")
    assert box.read_file("/tmp/ed/r.py").decode() == "z = 1\nb = z + z\n"


def test_create_and_search_file(box):
    out = run(box, "cd /tmp/ed && create new_mod.py")
    assert out.splitlines() == ["[File: /tmp/ed/new_mod.py (0 lines total)]", "1:"]
    assert run(box, "create new_mod.py").startswith("Error: File new_mod.py already exists")
    reset(box)
    out = run(box, "search_file line1 /tmp/ed/f.py")
    assert out.splitlines()[0] == 'Found 4 matches for "line1" in /tmp/ed/f.py:'
    assert "Line 12:line12" in out


def test_state_file_tracks_the_open_file_for_the_prompt(box):
    run(box, "open /tmp/ed/f.py")
    assert run(box, "cat /tmp/.swerl/state") == "1\n/tmp/ed/f.py"
    run(box, "cd /tmp/ed")
    assert parse_state(box.run(STATE_COMMAND).output, "/") == ("/tmp/ed", "/tmp/ed/f.py")
    run(box, "rm /tmp/.swerl/state")
    assert parse_state(box.run(STATE_COMMAND).output, "/") == ("/tmp/ed", None)


def test_editor_ignores_python_environment_of_the_repo(box):
    # The agent may export a PYTHONPATH whose sitecustomize breaks start-up; the tools run isolated (-I -S).
    run(box, "mkdir -p /tmp/shadow && echo 'raise SystemExit(\"shadowed\")' > /tmp/shadow/sitecustomize.py")
    assert "shadowed" in run(box, "PYTHONPATH=/tmp/shadow python3 -c pass")
    out = run(box, "PYTHONPATH=/tmp/shadow open /tmp/ed/f.py 2")
    assert "shadowed" not in out
    assert out.startswith("[File: /tmp/ed/f.py")
