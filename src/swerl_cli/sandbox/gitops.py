"""Git plumbing shared by backends and grading: patch file lists, the episode diff, repository hygiene, and the
one way swerl runs git on a repository it does not trust (docs/grading.md, "Git on untrusted repositories").

A repository's own configuration can run programs inside git commands run on it (hooks, `core.fsmonitor`, diff
drivers and text conversion, clean/smudge filters, includes), and its environment can redirect git (`GIT_DIR`,
`GIT_CONFIG_PARAMETERS`, `GIT_EXTERNAL_DIFF`). `-c` options override known keys but cannot stop includes or a
filter of a name swerl does not know, so inside sandboxes swerl never runs git on the repository's own git
directory: `shadow_setup` makes a throwaway git directory whose only tie to the repository is an alternates line
to its object store (objects are content-addressed), with swerl's own config, HEAD at base_commit and index, and
every command runs through `safe_git` (an empty environment plus `SAFE_ENV`, `SAFE_CONFIG`). On the host
(`tasks mine`, `tasks synth`) `git_argv` and `git_env` give the same options and environment.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping

from swerl_cli.streams.records import Task

# Environment of every git command swerl runs on an untrusted repository: no system or global config, no system
# attributes, no replace refs, no prompts, a home without files (so no ~/.gitconfig, ~/.config/git/attributes).
SAFE_ENV: dict[str, str] = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_PAGER": "cat",
    "HOME": "/nonexistent",
    "XDG_CONFIG_HOME": "/nonexistent",
    "LC_ALL": "C",
}
SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Command-line config (highest precedence) for every key git 2.39 could use to run a program or reach the network in
# the commands swerl runs, and for the keys that change what a diff looks like (prefixes, context, order); the diff
# commands also pass --no-ext-diff --no-textconv.
SAFE_CONFIG: tuple[str, ...] = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=",  # empty: off, both as git >= 2.37's boolean and as older gits' hook path
    "core.untrackedCache=false",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "core.pager=cat",
    "core.askPass=",
    "core.sshCommand=false",
    "core.gitProxy=",
    "credential.helper=",
    "diff.external=",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "diff.context=3",
    "diff.interHunkContext=0",
    "diff.algorithm=myers",
    "diff.orderFile=/dev/null",
    "core.quotePath=true",
    "color.ui=false",
    "status.renames=false",
    "log.showSignature=false",
    "gpg.program=false",
    "protocol.allow=never",
    "submodule.recurse=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "safe.directory=*",
)
DIFF_SAFE = "--no-ext-diff --no-textconv --no-color"


def git_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a host git process on an untrusted repository: `env` (default os.environ) without any
    GIT_* variable, plus SAFE_ENV."""
    base = os.environ if env is None else env
    out = {k: v for k, v in base.items() if not k.startswith("GIT_")}
    out.update(SAFE_ENV)
    return out


def git_argv(repo: str, *args: str) -> list[str]:
    """argv of `git -C repo <SAFE_CONFIG> args` (run it with `git_env()`)."""
    opts = [x for kv in SAFE_CONFIG for x in ("-c", kv)]
    return ["git", "-C", repo, *opts, *args]


def safe_git(git_dir: str | None = None, work_tree: str | None = None) -> str:
    """Shell words running git with an empty environment plus SAFE_ENV and SAFE_CONFIG; with `git_dir` (a shadow
    made by `shadow_setup`) and `work_tree`, on that git directory and its index."""
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in SAFE_ENV.items())
    where = ""
    if git_dir is not None:
        g = shlex.quote(git_dir)
        where = f"GIT_DIR={g} GIT_INDEX_FILE={g}/index "
        if work_tree is not None:
            where += f"GIT_WORK_TREE={shlex.quote(work_tree)} "
    opts = " ".join(f"-c {shlex.quote(kv)}" for kv in SAFE_CONFIG)
    return f"/usr/bin/env -i PATH={SAFE_PATH} {env} {where}git {opts}"


def shadow_setup(git_dir: str, work_tree: str, base_commit: str) -> str:
    """Shell command making `git_dir` a throwaway git directory for the repository at `work_tree`: its objects by
    an alternates line to the repository's, HEAD and index at base_commit (stat data refreshed, so `--3way` and
    status see which files differ), swerl's config only. Nothing of the
    repository's `.git` but its object store and base_commit's name (config, hooks, info/attributes, index, replace
    refs) is read through it."""
    g, w = shlex.quote(git_dir), shlex.quote(work_tree)
    sg = safe_git(git_dir, work_tree)
    real = f"cd {w} && {safe_git()}"
    commit = shlex.quote(base_commit + "^{commit}")
    return (
        f"rm -rf {g} && mkdir -p -m 700 {g} && mkdir -p {g}/objects/info {g}/objects/pack {g}/refs {g}/info "
        f'&& o="$(cd {w} && cd "$({safe_git()} rev-parse --git-path objects)" && pwd -P)" && [ -d "$o" ] '
        f'&& c="$({real} rev-parse -q --verify {commit})" '
        f"&& printf '%s\\n' \"$o\" > {g}/objects/info/alternates && printf '%s\\n' \"$c\" > {g}/HEAD "
        f"&& printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n' > {g}/config "
        f'&& {sg} read-tree "$c" && {{ {sg} update-index -q --refresh >/dev/null 2>&1 || true; }}'
    )


def parse_status_z(out: str) -> list[str]:
    """Paths of `git status --porcelain=v1 -z --no-renames` output (every entry: `XY path`)."""
    return [e[3:] for e in out.split("\0") if len(e) > 3]


def parse_numstat_z(out: str) -> list[str]:
    """Paths of `git apply --numstat -z` output, both sides of renames and copies."""
    paths: list[str] = []
    fields = out.split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if not entry:
            continue
        parts = entry.split("\t", 2)
        if len(parts) == 3 and parts[2]:
            paths.append(parts[2])
        elif len(parts) == 3 and i + 1 < len(fields):  # a rename or copy: old and new follow as fields
            paths += [fields[i], fields[i + 1]]
            i += 2
    return list(dict.fromkeys(paths))


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


def diff_command(base_commit: str, exclude: list[str], work_tree: str, token: str) -> str:
    """Shell command printing the episode's patch: the work tree (untracked files included) against base_commit,
    test files excluded, computed in a throwaway git directory (`shadow_setup`, a fresh index from base_commit,
    `git add -A`, `git diff --cached`), so nothing the policy put in `.git/` (config, hooks, attributes, index,
    replace refs) or in its shell's environment reaches the patch text. `token` names the throwaway directory."""
    specs = " ".join(shlex.quote(f":(exclude,literal){p}") for p in exclude)
    g = f"/tmp/swerl-diff-{token}"
    sg = safe_git(g, work_tree)
    return (
        f"( set -e; trap 'rm -rf {g}' EXIT; cd {shlex.quote(work_tree)}; {shadow_setup(g, work_tree, base_commit)}; "
        f"{sg} -c core.fileMode=false add -A >/dev/null 2>&1; "
        f"{sg} -c core.fileMode=false diff --cached --binary {DIFF_SAFE} --src-prefix=a/ --dst-prefix=b/ "
        f"{shlex.quote(base_commit)} -- . {specs} )"
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
