"""The repository a synth run mutates: a snapshot of the user's directory as a one-commit git repository.

The snapshot holds the directory's files (no `.git`, caches or build outputs) committed with a fixed identity and
date, so the same files always give the same commit. Its `git bundle` is the tasks' `repo_source`, from which
`swerl tasks build` makes the image; the bugs are diffs against that commit, made with git itself.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path, PurePosixPath

from swerl_cli.core.errors import InputError
from swerl_cli.sandbox.gitops import git_argv, git_env
from swerl_cli.tasks.mining import is_test_file

SKIP_DIRS = frozenset({".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox", ".venv",
                       "venv", "build", "dist", ".eggs", "node_modules"})  # fmt: skip
NOT_MUTATED = ("setup.py", "conftest.py", "noxfile.py", "docs/*", "doc/*", "examples/*", "benchmarks/*")
_ENV = {
    "GIT_AUTHOR_NAME": "swerl synth",
    "GIT_AUTHOR_EMAIL": "synth@swerl.invalid",
    "GIT_COMMITTER_NAME": "swerl synth",
    "GIT_COMMITTER_EMAIL": "synth@swerl.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str, input: str | None = None) -> str:
    env = {**git_env(), **_ENV}  # no system, user or repository program: hooks, filters, drivers, signing stay out
    res = subprocess.run(git_argv(str(repo), *args), capture_output=True, text=True, env=env, input=input)
    if res.returncode != 0:
        raise InputError(str(repo), None, None, f"git {args[0]} failed: {res.stderr.strip()[-300:]}")
    return res.stdout


def snapshot(src: str, dest: Path) -> str:
    """Copy `src`'s files into a new git repository at `dest` (one commit on `main`); returns the commit."""
    root = Path(src)
    if not root.is_dir():
        raise InputError(src, None, None, "not a directory")
    if dest.exists():
        shutil.rmtree(dest)

    def ignore(d: str, names: list[str]) -> set[str]:
        return {n for n in names if n in SKIP_DIRS or n.endswith((".pyc", ".egg-info")) or n == ".git"}

    shutil.copytree(root, dest, ignore=ignore, symlinks=True)
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A", "-f")
    _git(dest, "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", f"{root.resolve().name}")
    return _git(dest, "rev-parse", "HEAD").strip()


def write_bundle(repo: Path, path: Path, commit: str) -> None:
    """`git bundle` of the snapshot at `path`, kept as it is when it already holds `commit` (images stay cached)."""
    if path.exists():
        res = subprocess.run(["git", "bundle", "list-heads", str(path)], capture_output=True, text=True, env=git_env())
        if res.returncode == 0 and res.stdout.split()[:1] == [commit]:
            return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    _git(repo, "bundle", "create", str(tmp.resolve()), "main")
    tmp.replace(path)


def source_files(repo: Path, include: tuple[str, ...] = ()) -> list[str]:
    """The Python files to mutate: tracked regular files (no symlink, none under a symlinked directory), not
    tests, not setup/docs; with `include` globs, only matching ones."""
    out = []
    for entry in _git(repo, "ls-files", "-s", "-z").split("\0"):
        mode, _, path = entry.partition("\t")
        if not path.endswith(".py") or is_test_file(path) or mode[:6] not in ("100644", "100755"):
            continue  # a symlink (120000) may point at a host file: never read or written through
        if not is_plain_file(repo, path):
            continue
        if any(fnmatch.fnmatch(path, pat) for pat in NOT_MUTATED) and not include:
            continue
        if include and not any(fnmatch.fnmatch(path, pat) for pat in include):
            continue
        out.append(path)
    return sorted(out)


def is_plain_file(repo: Path, path: str) -> bool:
    """True when `path` is a regular file inside `repo` reached through no symlink (checked with lstat, each part)."""
    here = repo
    parts = PurePosixPath(path).parts
    if not parts or ".." in parts or PurePosixPath(path).is_absolute():
        return False
    for i, part in enumerate(parts):
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except OSError:
            return False
        if stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) if i == len(parts) - 1 else stat.S_ISDIR(mode)):
            return False
    return True


def read(repo: Path, path: str) -> str | None:
    """A file's text, or None when it is not UTF-8 or not a plain file of the repository (a symlink is not read)."""
    if not is_plain_file(repo, path):
        return None
    try:
        fd = os.open(repo / PurePosixPath(path), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            return f.read().decode("utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def _replace(target: Path, data: bytes) -> None:
    """Put `data` at `target` by a new file renamed over it: a symlink there is replaced, never written through,
    and a kill mid-write leaves only the temporary file (in the snapshot) behind."""
    mode = stat.S_IMODE(os.lstat(target).st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, mode)  # the executable bit is part of what git diffs
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def diff_pair(repo: Path, path: str, mutated: str) -> tuple[str, str]:
    """(bug patch, gold patch): the diffs from the committed file to `mutated` and back, made by git."""
    if not is_plain_file(repo, path):
        raise InputError(str(repo / path), None, None, "not a regular file of the repository (a symlink?): not mutated")
    target = repo / PurePosixPath(path)
    original = target.read_bytes()
    try:
        _replace(target, mutated.encode("utf-8"))
        args = ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--", path)
        bug = _git(repo, *args)
        gold = _git(repo, "diff", "-R", "--src-prefix=b/", "--dst-prefix=a/", *args[1:])  # -R swaps the prefixes
    finally:
        _replace(target, original)
    return bug, gold
