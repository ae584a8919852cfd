"""`--policy gold-steps --gold-mistakes P`: demonstrations of recovery. The first edit is made with a typical small-
model mistake (over-indented text, or single quotes the shell eats), the turn is marked `masked`, and the next turn
corrects it after reading the editor's answer (refused by the syntax check, or applied). Driven here through the
real editor script (both branches), and through a real `swerl collect | swerl grade` pipe on the example tasks."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from swerl_cli.policy import create
from swerl_cli.policy.base import EpisodeInfo, Sampling
from swerl_cli.policy.gold_steps import has_mistake, picked
from tests.conftest import EXAMPLES, ROOT, run_swerl

TOOLS = ROOT / "src" / "swerl_cli" / "agent" / "tools_bin" / "swerl_tools.py"
# half(): the fix is on a line followed by another statement of the block, so an over-indented edit cannot compile;
# greet(): the fixed line holds single quotes, and wrapped in single quotes it still compiles (wrongly).
BUGGY = "def greet(name):\n    return 'hi' - name\n\n\ndef half(x):\n    y = x // 3\n    return y\n"
FIXED = "def greet(name):\n    return 'hi' + name\n\n\ndef half(x):\n    y = x // 2\n    return y\n"
_COMMAND = re.compile(r"```command\n(.*?)\n```", re.S)


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env).stdout


def _act_out(tmp_path: Path, task: dict, share: float) -> tuple[list[dict], list[bool], str]:
    """Play the policy's turns against the real editor script in a git repository holding BUGGY; the
    conversation, each turn's `masked` flag, and the file at the end."""
    repo = tmp_path / "repo"
    shell = f'open() {{ {sys.executable} {TOOLS} open "$@"; }}; edit() {{ {sys.executable} {TOOLS} edit "$@"; }}; '
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "SWERL_STATE": str(tmp_path / "state"),
        "SWERL_WINDOW": "5",
        "SWERL_EDIT_CHECK": "syntax",
    }
    (tmp_path / "state").write_text("1\n")
    policy = create("gold-steps", gold_mistakes=share)
    episode = EpisodeInfo("m__m-1", 0, "t", task)
    messages: list[dict] = [{"role": "system", "content": "s"}, {"role": "user", "content": "fix m.py"}]
    masked = []
    for _ in range(10):
        comp = asyncio.run(policy.acomplete(messages, Sampling(), episode=episode))
        masked.append(comp.masked)
        messages.append({"role": "assistant", "content": comp.text})
        command = _COMMAND.search(comp.text).group(1)  # type: ignore[union-attr]
        if command == "submit":
            break
        proc = subprocess.run(["bash", "-c", shell + command], cwd=repo, capture_output=True, text=True, env=env)
        messages.append({"role": "user", "content": proc.stdout + proc.stderr})
    return messages, masked, (repo / "m.py").read_text()


def _task(tmp_path: Path) -> dict:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "m.py").write_text(FIXED)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "fixed")
    (repo / "m.py").write_text(BUGGY)
    return {"patch": _git(repo, "diff", "-R"), "FAIL_TO_PASS": []}


def test_a_refused_mistake_is_masked_then_corrected_through_the_real_editor(tmp_path: Path):
    """Bottom-up, half() is edited first: over-indented, the syntax check refuses it (file unchanged), the next
    turn says why and edits the same range with the right text; only the mistaken turn is masked."""
    task = _task(tmp_path)
    assert has_mistake(task)
    messages, masked, final = _act_out(tmp_path, task, 1.0)
    said = [m["content"] for m in messages if m["role"] == "assistant"]
    assert "edit --file m.py 6:6 '        y = x // 2'" in said[1]
    assert "your edit was NOT applied" in messages[5]["content"]
    assert said[2].startswith("The edit was not applied: my text was indented too deep.")
    assert "edit --file m.py 6:6 '    y = x // 2'" in said[2]
    assert masked == [False, True, False, False, False, False]
    assert final == FIXED


def test_an_applied_mistake_is_rewritten_in_place(tmp_path: Path):
    """greet()'s line wrapped naively in single quotes compiles, so the editor applies it (`return hi + name`);
    the correction reads that answer and rewrites the lines the mistake wrote, in double quotes."""
    task = _task(tmp_path)
    only_greet = "\n".join(line for line in task["patch"].splitlines() if "//" not in line) + "\n"
    task = {"patch": re.sub(r"@@ -5,3 \+5,3 @@.*", "", only_greet, flags=re.S), "FAIL_TO_PASS": []}
    messages, masked, final = _act_out(tmp_path, task, 1.0)
    said = [m["content"] for m in messages if m["role"] == "assistant"]
    assert "File updated." in messages[5]["content"]
    assert "2:    return hi + name" in messages[5]["content"]
    assert said[2].startswith("The edit went in, but the shell dropped the single quotes inside my text.")
    assert "edit --file m.py 2:2 \"    return 'hi' + name\"" in said[2]
    assert masked == [False, True, False, False]
    assert final.startswith("def greet(name):\n    return 'hi' + name\n")


def test_no_share_no_mistake_and_the_share_is_stable():
    """--gold-mistakes 0 (the default) plays the plain steps; the episodes picked for a share are the same on every
    run and about that share of them."""
    patch = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f(x):\n-    return x - 1\n+    return x + 1\n"
    policy = create("gold-steps")
    episode = EpisodeInfo("a", 0, "t", {"patch": patch})
    comp = asyncio.run(policy.acomplete([{"role": "assistant", "content": "x"}], Sampling(), episode=episode))
    assert "edit --file m.py 2:2 '    return x + 1'" in comp.text
    assert not comp.masked
    chosen = [picked(f"task-{i}", 0, 0.5) for i in range(2000)]
    assert chosen == [picked(f"task-{i}", 0, 0.5) for i in range(2000)]
    assert 900 < sum(chosen) < 1100
    assert not any(picked(f"task-{i}", 0, 0.0) for i in range(200))
    assert all(picked(f"task-{i}", 0, 1.0) for i in range(200))


def test_a_share_outside_0_1_is_one_line_before_any_episode():
    proc = run_swerl("collect", str(EXAMPLES / "tasks.jsonl"), "--policy", "gold-steps", "--gold-mistakes", "1.5")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == b""
    assert proc.stderr.decode().strip().count("\n") == 0
    assert "gold_mistakes" in proc.stderr.decode()
    assert "1.5" in proc.stderr.decode()


@pytest.mark.docker
def test_mistaken_demonstrations_resolve_through_a_real_collect_grade_pipe(tmp_path: Path):
    """Every example task through `collect --policy gold-steps --gold-mistakes 1 | grade`: all resolve; where the
    first block allows a mistake, exactly turn 1 is masked, and the turn after it answers what the editor said (the
    examples have both answers)."""
    tasks = [json.loads(line) for line in (EXAMPLES / "tasks.jsonl").read_text().splitlines()]
    graded = tmp_path / "graded.jsonl"
    swerl = f"{shlex.quote(sys.executable)} -m swerl_cli"
    cmd = (
        f"set -o pipefail; {swerl} collect {EXAMPLES / 'tasks.jsonl'} --policy gold-steps --gold-mistakes 1 "
        f"-c {EXAMPLES / 'paper-mini' / 'collect.yaml'} --max-turns 8 --concurrency 4 --run gm 2>{tmp_path}/c.err "
        f"| {swerl} grade --workers 4 > {graded} 2>{tmp_path}/g.err"
    )
    res = subprocess.run(["bash", "-c", cmd], timeout=900)
    errs = (tmp_path / "c.err").read_text()[-2000:] + (tmp_path / "g.err").read_text()[-2000:]
    assert res.returncode == 0, errs
    recs = {r["instance_id"]: r for r in map(json.loads, graded.read_text().splitlines())}
    assert len(recs) == len(tasks) == 8
    assert all(r["grade"]["resolved"] for r in recs.values()), errs
    with_mistake = [t["instance_id"] for t in tasks if has_mistake(t)]
    assert len(with_mistake) == 6
    answers = set()
    for iid, r in recs.items():
        flags = [t.get("masked", False) for t in r["turns"]]
        assert flags == [k == 1 and iid in with_mistake for k in range(len(flags))], iid
        if iid in with_mistake:
            said = [m["content"] for m in r["messages"] if m["role"] == "assistant"]
            observation = r["messages"][r["turns"][1]["message_index"] + 1]["content"]
            applied = "File updated." in observation
            answers.add(applied)
            assert said[2].startswith("The edit went in" if applied else "The edit was not applied"), iid
    assert answers == {True, False}  # both branches: refused by the syntax check, and applied then rewritten
    assert r["policy"]["gold_mistakes"] == 1.0
