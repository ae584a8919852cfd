"""`tasks mine` and `tasks synth` run git on repositories swerl did not create: nothing in the repository's git
configuration, attributes or hooks, nor GIT_* variables of the caller, runs a program or changes the diffs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swerl_cli.tasks.mining.commits import MineConfig, inspect_commit, list_commits
from swerl_cli.tasks.synth.repo import diff_pair, snapshot
from tests.tasks.mining.fixture_repo import build_repo


def _plant(repo: Path, marker: Path) -> None:
    """Every program git could be made to run writes `marker`: diff drivers, text conversion, an external diff,
    filters, fsmonitor, hooks, an included config file."""
    prog = repo.parent / "evil.sh"
    prog.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\necho HIJACKED\n')
    prog.chmod(0o755)
    inc = repo.parent / "inc.cfg"
    inc.write_text(f'[diff "inc"]\n\ttextconv = {prog}\n[core]\n\tpager = {prog}\n')
    with open(repo / ".git" / "config", "a") as fh:
        fh.write(
            f'[diff "evil"]\n\ttextconv = {prog}\n\tcommand = {prog}\n[diff]\n\texternal = {prog}\n'
            f"\tmnemonicPrefix = true\n\tnoprefix = true\n"
            f'[filter "evil"]\n\tclean = {prog}\n\tsmudge = {prog}\n[core]\n\tfsmonitor = {prog}\n'
            f"\thooksPath = {repo.parent}\n[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {prog}\n"
            f"[include]\n\tpath = {inc}\n"
        )
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* diff=evil filter=evil\n*.py diff=inc\n")
    for hook in ("post-checkout", "post-index-change", "reference-transaction"):
        (repo.parent / hook).symlink_to(prog)


@pytest.fixture
def hostile_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    marker = tmp_path / "ran"
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(tmp_path / "evil.sh"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'diff.noprefix=true'")
    return marker


def test_mine_runs_no_program_of_the_mined_repository(tmp_path: Path, hostile_env: Path) -> None:
    repo = tmp_path / "calc"
    commits = build_repo(repo)
    _plant(repo, hostile_env)
    cfg = MineConfig()
    listed = dict(list_commits(str(repo), cfg))
    cand = inspect_commit(str(repo), commits["fix_clamp"], cfg, listed[commits["fix_clamp"]])
    assert not isinstance(cand, str), cand
    assert not hostile_env.exists(), hostile_env.read_text()
    # the patches are git's plain diffs: a/ b/ prefixes, the real lines, no driver output
    assert cand.patch.startswith("diff --git a/calc/ops.py b/calc/ops.py\n"), cand.patch[:200]
    assert "HIJACKED" not in cand.patch + cand.test_patch
    assert "+    return max(lo, min(x, hi))" in cand.patch
    assert "+++ b/tests/test_ops.py" in cand.test_patch


def test_synth_snapshot_and_diffs_run_no_program(
    tmp_path: Path, hostile_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "m.py").write_text("def f(a, b):\n    return a - b\n")
    (src / ".gitattributes").write_text("*.py diff=evil filter=lfs\n")
    home = tmp_path / "home"
    home.mkdir()
    prog = tmp_path / "evil.sh"
    prog.write_text(f'#!/bin/sh\necho "$0" >> {hostile_env}\necho HIJACKED\n')
    prog.chmod(0o755)
    # a user's global config with a filter and a driver: synth's snapshot must not run them either
    (home / ".gitconfig").write_text(f'[filter "lfs"]\n\tclean = {prog}\n[diff "evil"]\n\ttextconv = {prog}\n')
    monkeypatch.setenv("HOME", str(home))
    repo = tmp_path / "snap"
    snapshot(str(src), repo)
    bug, gold = diff_pair(repo, "pkg/m.py", "def f(a, b):\n    return a + b\n")
    assert not hostile_env.exists(), hostile_env.read_text()
    shown = subprocess.run(["git", "-C", str(repo), "show", "HEAD:pkg/m.py"], capture_output=True, text=True)
    assert shown.stdout == "def f(a, b):\n    return a - b\n"  # committed as it is, no clean filter
    assert "-    return a - b\n+    return a + b" in bug
    assert "HIJACKED" not in bug + gold
