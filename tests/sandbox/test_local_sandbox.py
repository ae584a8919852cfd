"""The local backend (no engine needed): a clone holding only base_commit's history, a persistent shell."""

from __future__ import annotations

import pytest

from swerl_cli.core.errors import ConfigError
from swerl_cli.sandbox import create, open_sandbox
from swerl_cli.streams.records import Located, Task
from tests.sandbox.toy import make_repo, toy_task


@pytest.fixture
def local_task(tmp_path) -> Task:
    rec = toy_task(tmp_path, "unused")
    return Task.from_json(Located("t", 1, rec))


def test_local_sandbox_runs_in_a_clean_clone(local_task: Task, tmp_path, capfd, monkeypatch) -> None:
    from swerl_cli.sandbox import local

    monkeypatch.setattr(local, "_warned", False)
    with open_sandbox(local_task, create("local", repo_dir=str(tmp_path / "repo"))) as sb:
        assert sb.run("git log --all --format=%H; git tag; git stash list").output.split() == [local_task.base_commit]
        assert "FIXED-MARKER" not in sb.run("cat calc.py").output
        sb.run("cd tests && export V=5")
        assert sb.run("basename $PWD; echo $V").output == "tests\n5\n"
        res = sb.run("sleep 30; echo never", timeout_s=0.5)
        assert res.timed_out
        assert "never" not in res.output
        sb.run("cd .. && echo 'y = 2' >> calc.py")
        assert "+y = 2" in sb.diff()
        root = sb.workdir
    assert "does NOT isolate" in capfd.readouterr().err
    import os

    assert not os.path.exists(root)


def test_local_sandbox_needs_repo_dir(local_task: Task) -> None:
    backend = create("local")
    with pytest.raises(ConfigError, match="--repo-dir"):
        backend.check_ready()  # what a command asks before its first episode
    with pytest.raises(ConfigError, match="--repo-dir"), open_sandbox(local_task, backend):
        pass


def test_make_repo_is_reproducible(tmp_path) -> None:
    a = make_repo(tmp_path / "a", dirty=False)
    b = make_repo(tmp_path / "b", dirty=True)
    assert a["base_commit"] == b["base_commit"]


def test_a_rows_repo_never_leads_out_of_repo_dir(tmp_path) -> None:
    """`repo: ".."` named the parent of --repo-dir (a git repository here): the row chose a host directory."""
    import dataclasses
    import subprocess

    from swerl_cli.sandbox.local import find_repo

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "repos").mkdir()
    task = dataclasses.replace(Task.from_json(Located("t", 1, toy_task(tmp_path / "toy", "x"))), repo="..")
    with pytest.raises(ConfigError, match="no git repository"):
        find_repo(task, str(tmp_path / "repos"))
