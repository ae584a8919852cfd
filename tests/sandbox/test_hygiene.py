"""Episode hygiene: inside an episode container nothing reaches the fix, although the image hid it everywhere."""

from __future__ import annotations

import pytest

from swerl_cli.sandbox import SandboxLimits, open_sandbox
from swerl_cli.streams.records import Task
from tests.sandbox.engines import DOCKER

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def fix_blob(toy_t: Task) -> str:
    """The blob id of calc.py after the fix, computed in a container without hygiene (where it does exist)."""
    with open_sandbox(toy_t, DOCKER, run_id="pytest-hyg-raw", hygiene=False) as sb:
        assert sb.run("git log --all --oneline | grep -c 'the fix'").output.strip() == "1"  # the image is dirty
        blob = sb.run("git rev-parse v-fix:calc.py").output.strip()
        assert sb.run(f"git cat-file -e {blob}").exit_code == 0
    return blob


def test_episode_repo_holds_nothing_past_base_commit(toy_t: Task, fix_blob: str) -> None:
    with open_sandbox(toy_t, DOCKER, run_id="pytest-hyg") as sb:
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
    with open_sandbox(toy_t, DOCKER, run_id="pytest-hyg-grep") as sb:
        res = sb.run(
            "grep -rIl --exclude-dir=proc --exclude-dir=sys -e FIXED-MARKER-7f3a -e test_add_param / "
            "2>/dev/null | grep -v '^/usr/lib' ; true",
            timeout_s=120,
        )
        assert res.output == ""


def test_second_start_of_a_cleaned_repo_takes_the_fast_path(toy_t: Task) -> None:
    from swerl_cli.sandbox.gitops import hygiene_command

    with open_sandbox(toy_t, DOCKER, run_id="pytest-hyg-fast") as sb:
        assert sb.run(hygiene_command(toy_t.base_commit)).output.strip() == "fast"
        sb.run("git tag sneaky")  # any change to refs invalidates the fingerprint
        assert sb.run(hygiene_command(toy_t.base_commit)).output.strip() == "cleaned"
        assert sb.run("git tag").output == ""


# Dirt an ordinary image can hold: a plain clone (origin/HEAD is a symref), the fix in a `.keep` pack, a repo config
# that keeps big packs out of gc, objects borrowed through alternates, a stash and a note.
AS_ROOT = SandboxLimits(user="root")  # preparing the dirt is the image builder's work (root), not the episode user's
DIRTY_CLONE = """set -e
git clone -q --no-local /testbed /work/c && cd /work/c
git -c user.name=t -c user.email=t@t notes add -m FIXED-MARKER-7f3a HEAD
git repack -a -d -q && for p in .git/objects/pack/*.pack; do touch "${p%.pack}.keep"; done
git config gc.bigPackThreshold 1
git clone -q --bare --no-local /testbed /work/alt.git && echo /work/alt.git/objects > .git/objects/info/alternates
git -C /work/alt.git tag alt-only $(git rev-parse v-fix^{tree})
echo "x = 1  # FIXED-MARKER-7f3a" >> calc.py && git -c user.name=t -c user.email=t@t stash -q
"""


def test_hygiene_cleans_an_ordinary_clone_with_keep_packs_config_alternates_stash_and_notes(
    toy_t: Task, fix_blob: str
) -> None:
    from swerl_cli.sandbox.gitops import hygiene_check_command, hygiene_command

    with open_sandbox(toy_t, DOCKER, run_id="pytest-hyg-clone", hygiene=False, limits=AS_ROOT) as sb:
        assert sb.run(DIRTY_CLONE, timeout_s=120).exit_code == 0
        sb.run("cd /work/c")
        assert sb.run("git symbolic-ref refs/remotes/origin/HEAD").output.strip() == "refs/remotes/origin/main"
        fix = sb.run("git rev-parse v-fix^{commit}").output.strip()
        dirty = sb.run(hygiene_check_command())
        assert dirty.exit_code == 4
        assert "hygiene check" in dirty.output
        res = sb.run(hygiene_command(toy_t.base_commit), timeout_s=300)
        assert (res.exit_code, res.output.strip().splitlines()[-1]) == (0, "cleaned"), res.output
        for obj in (fix, fix_blob):
            assert sb.run(f"git cat-file -e {obj}").exit_code != 0
        assert fix_blob not in sb.run("git cat-file --batch-all-objects --batch-check").output
        assert (
            sb.run(
                "ls .git/objects/info; ls .git/objects/pack | grep -c keep; git stash list; git notes list"
            ).output.strip()
            == "0"
        )
        assert sb.run("git for-each-ref --format='%(refname)'").output.split() == ["refs/heads/main"]
        assert sb.run(hygiene_check_command()).output.strip() == "clean"
        assert sb.run("git status --porcelain").output == ""
        assert sb.run("git fsck --no-dangling 2>&1").exit_code == 0
