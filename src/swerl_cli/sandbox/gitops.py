"""Git plumbing shared by backends and grading: patch file lists, the episode diff, repository hygiene."""

from __future__ import annotations

import re
import shlex

from swerl_cli.records import Task

_DIFF_GIT = re.compile(r"^diff --git a/(.+?) b/(.+)$")


def patch_files(patch: str) -> tuple[list[str], set[str]]:
    """Paths a unified diff touches (new side, old side for deletions) and the subset it creates.

    >>> patch_files("diff --git a/x.py b/x.py\\n--- /dev/null\\n+++ b/x.py\\n")
    (['x.py'], {'x.py'})
    """
    files: list[str] = []
    new: set[str] = set()
    old_path: str | None = None
    for line in patch.splitlines():
        m = _DIFF_GIT.match(line)
        if m:
            old_path = m.group(1)
            if m.group(2) not in files:
                files.append(m.group(2))
            continue
        if line.startswith("--- "):
            old_path = _strip(line[4:])
        elif line.startswith("+++ "):
            path = _strip(line[4:])
            if path is None:  # deletion: the old side names the file
                path = old_path
            elif old_path is None:
                new.add(path)
            if path and path not in files:
                files.append(path)
    return files, new


def _strip(spec: str) -> str | None:
    spec = spec.split("\t")[0].strip()
    if spec == "/dev/null":
        return None
    return spec[2:] if spec[:2] in ("a/", "b/") else spec


def touched_files(task: Task) -> list[str]:
    """Test files of a task: its `test_files` field, else every file its test_patch touches."""
    explicit = task.extra.get("test_files")
    if isinstance(explicit, list) and all(isinstance(f, str) for f in explicit):
        return list(explicit)
    return patch_files(task.test_patch)[0]


def diff_command(base_commit: str, exclude: list[str]) -> str:
    """Shell command printing `git diff` vs base_commit, untracked files included, via a throwaway index."""
    specs = " ".join(shlex.quote(f":(exclude,literal){p}") for p in exclude)
    base = shlex.quote(base_commit)
    return (
        '( set -e; cd "$(git rev-parse --show-toplevel)"; t=$(mktemp); trap \'rm -f "$t"\' EXIT; '
        'cp .git/index "$t" 2>/dev/null || true; GIT_INDEX_FILE="$t" git add -A >/dev/null 2>&1; '
        'GIT_INDEX_FILE="$t" git -c core.fileMode=false diff --cached --binary --no-color --no-ext-diff '
        f"{base} -- . {specs} )"
    )


# Leaves the repository with one branch at base_commit and nothing else: no other refs, tags, remotes, stash,
# reflog, loose or packed objects unreachable from HEAD. A fingerprint file makes repeat runs (images that were
# already cleaned, e.g. by `swerl tasks build`) cost a few git calls instead of a gc.
HYGIENE = r"""(
set -e +o pipefail
base=__BASE__
fp() { { git rev-parse HEAD; git for-each-ref; git count-objects -v; \
  ls .git/objects/pack .git/logs 2>/dev/null || true; git remote; test -e .git/objects/info/alternates && echo alt; \
  } | sha1sum | cut -c1-40; }
git rev-parse -q --verify "$base^{commit}" >/dev/null || { echo "base_commit $base is not in the repository"; exit 3; }
if [ "$(git rev-parse HEAD)" = "$base" ] && [ -f .git/swerl-clean ] && [ "$(cat .git/swerl-clean)" = "$(fp)" ]; then
  echo fast; exit 0; fi
if [ "$(git rev-parse HEAD)" != "$base" ]; then git checkout -q -f --detach "$base"; fi
branch=$(git symbolic-ref -q --short HEAD || true)
if [ -z "$branch" ]; then branch=main; git checkout -q -B main; fi
git for-each-ref --format='delete %(refname)' | { grep -vx "delete refs/heads/$branch" || true; } \
  | git update-ref --stdin
for r in $(git remote); do git remote remove "$r"; done
if [ -e .git/objects/info/alternates ]; then git repack -a -d -q; rm -f .git/objects/info/alternates; fi
rm -rf .git/logs .git/refs/original .git/ORIG_HEAD .git/FETCH_HEAD .git/MERGE_HEAD .git/COMMIT_EDITMSG .git/rr-cache
git worktree prune
git -c gc.reflogExpire=now -c gc.reflogExpireUnreachable=now -c gc.rerereResolved=now gc -q --prune=now
rm -rf .git/logs
fp > .git/swerl-clean
echo cleaned
)"""


def hygiene_command(base_commit: str) -> str:
    """The shell command that enforces episode hygiene in the current directory (a git work tree)."""
    return HYGIENE.replace("__BASE__", shlex.quote(base_commit))
