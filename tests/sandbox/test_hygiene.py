"""Episode hygiene: inside an episode container nothing reaches the fix, although the image hid it everywhere."""

from __future__ import annotations

import pytest

from swerl_cli.records import Task
from swerl_cli.sandbox import open_sandbox

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def fix_blob(toy_t: Task) -> str:
    """The blob id of calc.py after the fix, computed in a container without hygiene (where it does exist)."""
    with open_sandbox(toy_t, run_id="pytest-hyg-raw", hygiene=False) as sb:
        assert sb.run("git log --all --oneline | grep -c 'the fix'").output.strip() == "1"  # the image is dirty
        blob = sb.run("git rev-parse v-fix:calc.py").output.strip()
        assert sb.run(f"git cat-file -e {blob}").exit_code == 0
    return blob


def test_episode_repo_holds_nothing_past_base_commit(toy_t: Task, fix_blob: str) -> None:
    with open_sandbox(toy_t, run_id="pytest-hyg") as sb:
        assert sb.run("git rev-parse HEAD").output.strip() == toy_t.base_commit
        assert sb.run("git log --all --format=%H").output.split() == [toy_t.base_commit]
        assert sb.run("git reflog --all").output == ""
        assert sb.run("git tag; git stash list; git remote").output == ""
        assert sb.run("git for-each-ref --format='%(refname)'").output.split() == ["refs/heads/main"]
        objects = sb.run("git rev-list --all --objects").output
        assert fix_blob not in objects
        assert sb.run(f"git cat-file -e {fix_blob}").exit_code != 0
        assert fix_blob not in sb.run("git cat-file --batch-all-objects --batch-check").output
        assert sb.run("git fsck --lost-found --unreachable --no-reflogs 2>&1").output.strip() == ""
        assert sb.run("git status --porcelain").output == ""


def test_fix_and_test_patch_are_nowhere_in_the_container(toy_t: Task) -> None:
    with open_sandbox(toy_t, run_id="pytest-hyg-grep") as sb:
        res = sb.run(
            "grep -rIl --exclude-dir=proc --exclude-dir=sys -e FIXED-MARKER-7f3a -e test_add_param / "
            "2>/dev/null | grep -v '^/usr/lib' ; true",
            timeout_s=120,
        )
        assert res.output == ""


def test_second_start_of_a_cleaned_repo_takes_the_fast_path(toy_t: Task) -> None:
    from swerl_cli.sandbox.gitops import hygiene_command

    with open_sandbox(toy_t, run_id="pytest-hyg-fast") as sb:
        assert sb.run(hygiene_command(toy_t.base_commit)).output.strip() == "fast"
        sb.run("git tag sneaky")  # any change to refs invalidates the fingerprint
        assert sb.run(hygiene_command(toy_t.base_commit)).output.strip() == "cleaned"
        assert sb.run("git tag").output == ""
