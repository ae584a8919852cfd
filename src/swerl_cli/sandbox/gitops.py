"""Git plumbing shared by backends and grading: patch file lists, the episode diff, repository hygiene."""

from __future__ import annotations

import re
import shlex

from swerl_cli.streams.records import Task

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
    """Shell command printing `git diff` vs base_commit, untracked files included, via a throwaway index.

    The copy keeps the index's mtime (`cp -p`): git trusts an entry's stat data only when the entry is older than
    the index file, so a new mtime made an edit that kept the file's size in the second of the last index write
    (the sandbox start's bug commit, then a fast first edit) look unchanged, and the patch came out empty."""
    specs = " ".join(shlex.quote(f":(exclude,literal){p}") for p in exclude)
    base = shlex.quote(base_commit)
    return (
        '( set -e; cd "$(git rev-parse --show-toplevel)"; t=$(mktemp); trap \'rm -f "$t"\' EXIT; '
        'cp -p .git/index "$t" 2>/dev/null || true; GIT_INDEX_FILE="$t" git add -A >/dev/null 2>&1; '
        'GIT_INDEX_FILE="$t" git -c core.fileMode=false diff --cached --binary --no-color --no-ext-diff '
        f"{base} -- . {specs} )"
    )


# Leaves the repository with one branch at base_commit and nothing else. The object store is rebuilt from exactly
# the objects reachable from base_commit (one new pack; loose objects, every old pack, `.keep` files, commit-graphs
# and alternates removed), so no git config in the image (gc.bigPackThreshold, ...) can keep an object alive. Refs,
# remotes, stash, notes, reflogs, worktrees and *_HEAD files go. Symbolic refs (origin/HEAD in every clone) are
# deleted on their own first: one update-ref transaction cannot delete a symref and its target. Then a check runs
# that fails closed (exit 4): exactly one ref, no alternates, and the stored objects equal the reachable ones. A
# fingerprint file makes repeat runs (images cleaned by `swerl tasks build`) cost a few git calls.
CHECK = r"""verify() {
  refs=$(git for-each-ref --format='%(refname)')
  [ "$refs" = "refs/heads/$(git symbolic-ref -q --short HEAD)" ] || { echo "hygiene check: refs left: $refs"; exit 4; }
  [ ! -e .git/objects/info/alternates ] || { echo "hygiene check: alternates left"; exit 4; }
  t=$(mktemp -d); git rev-list --objects HEAD | cut -d' ' -f1 | sort -u > "$t/reach"
  git cat-file --batch-all-objects --batch-check='%(objectname)' | sort -u > "$t/have"
  extra=$(comm -13 "$t/reach" "$t/have" | head -3 | tr '\n' ' '); missing=$(comm -23 "$t/reach" "$t/have" | head -3)
  rm -rf "$t"
  [ -z "$extra" ] || { echo "hygiene check: objects outside base_commit's history: $extra"; exit 4; }
  [ -z "$missing" ] || { echo "hygiene check: objects of base_commit's history missing: $missing"; exit 4; }
}"""
HYGIENE = r"""(
set -e +o pipefail
base=__BASE__
__CHECK__
fp() { { git rev-parse HEAD; git for-each-ref; git count-objects -v; \
  ls .git/objects/pack .git/logs 2>/dev/null || true; git remote; test -e .git/objects/info/alternates && echo alt; \
  } | sha1sum | cut -c1-40; }
git rev-parse -q --verify "$base^{commit}" >/dev/null || { echo "base_commit $base is not in the repository"; exit 3; }
if [ "$(git rev-parse HEAD)" = "$base" ] && [ -f .git/swerl-clean ] && [ "$(cat .git/swerl-clean)" = "$(fp)" ]; then
  echo fast; exit 0; fi
if [ "$(git rev-parse HEAD)" != "$base" ]; then git checkout -q -f --detach "$base"; fi
branch=$(git symbolic-ref -q --short HEAD || true)
if [ -z "$branch" ]; then branch=main; git checkout -q -B main; fi
git for-each-ref --format='%(refname) %(symref)' | while read -r ref target; do
  if [ -n "$target" ]; then git symbolic-ref --delete "$ref"; fi; done
git for-each-ref --format='delete %(refname)' | { grep -vx "delete refs/heads/$branch" || true; } \
  | git update-ref --stdin
for r in $(git remote); do git remote remove "$r"; done
git reset -q  # the index names only base_commit's blobs (staged content stays in the work tree)
rm -rf .git/logs .git/refs/original .git/rr-cache .git/worktrees .git/rebase-merge .git/rebase-apply .git/sequencer
find .git -maxdepth 1 -name '*_HEAD' ! -name HEAD -delete
find .git -maxdepth 1 -name 'COMMIT_EDITMSG' -delete
tmp=$(mktemp -d .git/swerl-pack.XXXXXX)
git rev-list --objects HEAD | git -c pack.writeBitmaps=false pack-objects -q "$tmp/pack" >/dev/null
rm -rf .git/objects/pack .git/objects/info .git/objects/??
mkdir -p .git/objects/pack .git/objects/info
mv "$tmp"/pack-* .git/objects/pack/
rm -rf "$tmp"
verify
fp > .git/swerl-clean
echo cleaned
)"""


def hygiene_command(base_commit: str) -> str:
    """The shell command that enforces episode hygiene in the current directory (a git work tree)."""
    return HYGIENE.replace("__CHECK__", CHECK).replace("__BASE__", shlex.quote(base_commit))


def hygiene_check_command() -> str:
    """The check alone: exit 4 with a reason when the repository holds anything outside HEAD's history."""
    return f"( set -e +o pipefail\n{CHECK}\nverify\necho clean )"
