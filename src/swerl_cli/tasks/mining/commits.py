"""Fix commits of a local git repository: which commits are candidates, and their source and test diffs."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from swerl_cli.core.errors import InputError, UsageError
from swerl_cli.sandbox.gitops import git_argv, git_env

PYTEST = (
    "python3 -m pytest -rA --tb=no -p no:cacheprovider --color=no"
    " --junitxml=/tmp/swerl-junit.xml -o junit_family=xunit1"
)
# Files that are neither code nor tests: a commit touching only these and tests is not a fix.
NON_CODE_EXTS = frozenset(
    ".md .rst .txt .json .yml .yaml .toml .cfg .ini .csv .png .jpg .jpeg .gif .svg .pkl .lock".split()
)


@dataclass(frozen=True, slots=True)
class MineConfig:
    """What `swerl tasks mine` looks at and how it runs the tests; flags are the kebab-case twins."""

    rev: str = "HEAD"
    since: str | None = None
    until: str | None = None
    max_commits: int | None = None
    max_files: int = 7
    max_lines: int = 500
    repeats: int = 2
    workers: int = 1
    timeout_s: float = 600.0
    base_image: str = "swerl-base"
    setup: tuple[str, ...] = ()
    network: bool = False
    test_cmd: str = PYTEST + " {files}"
    name: str | None = None
    repo_name: str | None = None
    issues: str | None = None

    def __post_init__(self) -> None:
        for key in ("max_files", "max_lines", "repeats", "workers"):
            if getattr(self, key) < 1:
                raise UsageError(f"--{key.replace('_', '-')} must be >= 1; got {getattr(self, key)}")
        if self.max_commits is not None and self.max_commits < 1:
            raise UsageError(f"--max-commits must be >= 1; got {self.max_commits}")
        if self.rev.startswith("-") or not self.rev.strip():
            raise UsageError(f"--rev must be a revision, not an option or empty; got {self.rev!r}")
        if "{files}" not in self.test_cmd:
            raise UsageError("--test-cmd must contain {files} (the test files the commit touches)")


@dataclass(slots=True)
class Candidate:
    """A fix commit: its parent, message, and the source and test halves of its diff."""

    commit: str
    parent: str
    message: str
    date: str
    source_files: list[str]
    test_files: list[str]
    patch: str = ""
    test_patch: str = ""


def is_test_file(path: str) -> bool:
    """`tests/x.py`, `test_x.py`, `x_test.py`, `conftest.py` and anything under a test(s)/testing directory."""
    p = PurePosixPath(path)
    if any(part in ("test", "tests", "testing") for part in p.parts[:-1]):
        return True
    return p.name.startswith("test_") or p.stem.endswith("_test") or p.name == "conftest.py"


def is_code_file(path: str) -> bool:
    """Neither a test nor documentation/data (by extension, or under docs/)."""
    p = PurePosixPath(path)
    return not is_test_file(path) and p.suffix.lower() not in NON_CODE_EXTS and p.parts[0] not in ("docs", "doc")


def git(repo: str, *args: str) -> str:
    """Run git in `repo`; a failure is an InputError naming the repository."""
    res = subprocess.run(git_argv(repo, *args), capture_output=True, env=git_env())  # the repo's config runs nothing
    if res.returncode != 0:
        raise InputError(
            repo, None, None, f"git {args[0]} failed: {res.stderr.decode(errors='replace').strip()[-300:]}"
        )
    return res.stdout.decode("utf-8", "replace")


def list_commits(repo: str, cfg: MineConfig) -> list[tuple[str, list[str]]]:
    """(commit, parents) of the non-merge commits reachable from `cfg.rev` in the date window, oldest first."""
    if not (Path(repo) / ".git").exists() and not Path(repo, "HEAD").exists():
        raise InputError(repo, None, None, "not a git repository")
    args = ["rev-list", "--no-merges", "--reverse", "--parents"]
    if cfg.max_commits:
        args.append(f"--max-count={cfg.max_commits}")
    if cfg.since:
        args.append(f"--since={cfg.since}")
    if cfg.until:
        args.append(f"--until={cfg.until}")
    return [
        (ids[0], ids[1:])
        for ids in map(str.split, git(repo, *args, "--end-of-options", cfg.rev, "--").splitlines())
        if ids
    ]


def inspect_commit(repo: str, commit: str, cfg: MineConfig, parents: list[str] | None = None) -> Candidate | str:
    """The candidate of a commit, or why it is not one (the reason is counted)."""
    if parents is None:
        parents = git(repo, "rev-list", "--parents", "-n1", commit).split()[1:]
    if len(parents) != 1:
        return "root commit"
    parent = parents[0]
    entries = git(repo, "diff", "--numstat", "-z", "--no-renames", parent, commit).split("\0")
    source: list[str] = []
    tests: list[str] = []
    source_lines = 0
    for entry in filter(None, entries):
        added, deleted, path = entry.split("\t", 2)
        if is_test_file(path):
            tests.append(path)
        else:
            source.append(path)
            source_lines += sum(int(n) for n in (added, deleted) if n.isdigit())
    if not tests:
        return "no test change"
    if not any(is_code_file(f) for f in source):
        return "no source change"
    if len(source) > cfg.max_files or source_lines >= cfg.max_lines:
        return "too large"
    date, _, message = git(repo, "log", "-1", "--format=%aI%n%B", commit).partition("\n")
    message = message.strip()
    cand = Candidate(commit, parent, message, date, source, tests)
    diff = ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--binary", parent, commit, "--")
    cand.patch = git(repo, *diff, *source)
    cand.test_patch = git(repo, *diff, *tests)
    return cand
