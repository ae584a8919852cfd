"""What a patch changed, decided by git: apply it, read the changed paths from the work tree, restore test files.

Every git command runs on a throwaway git directory (`gitops.shadow_setup`: the repository's objects, swerl's own
config, index and HEAD at base_commit) through `gitops.safe_git`, so no hook, fsmonitor, driver, filter or include
of the repository runs inside the grader. The patch file lives outside the repository. Strict mode applies with
`git apply` only (it refuses paths under `.git/` and writes beyond a symbolic link). Harness mode keeps SWE-bench's
fallbacks: `git apply --3way`, then GNU patch with the repository's `.git` moved out of the work tree (a patch
that creates a `.git` is refused; GNU patch refuses symlinks leading outside the work tree). The changed paths are
git's status of the work tree against base_commit (`-z`, untracked files one by one, no renames) minus the entries
the image already had, plus every file whose inode changed while the patch applied (`find -cnewer`, so files hidden
by a `.gitignore` count too). The image's own test-infrastructure files outside git are saved before the patch, so
restoring one gives the image's copy back.
"""

from __future__ import annotations

import secrets
import shlex
from dataclasses import dataclass, field

from swerl_cli.core.errors import SandboxError
from swerl_cli.grading import infra
from swerl_cli.sandbox import ExecResult, Sandbox
from swerl_cli.sandbox.gitops import parse_numstat_z, parse_status_z, safe_git, shadow_setup

GIT_APPLY = "git apply --verbose"
GIT_3WAY = "git apply --verbose --3way"
GNU_PATCH = "patch --batch --fuzz=5 -p1"
STEP_TIMEOUT_S = 300.0


class StepFailed(SandboxError):
    """A grading step after the patch applied failed (restore, test_patch, a step timeout): the patch's fault
    unless the unpatched control run fails the same way."""


@dataclass
class RepoView:
    """The grader's git on the repository of one sandbox (a shadow git directory made on first use)."""

    sb: Sandbox
    base: str
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    before: set[str] = field(default_factory=set)  # status entries before the patch (build outputs in the image)
    kept: set[str] = field(default_factory=set)  # the image's test-infrastructure files outside git, saved

    def __post_init__(self) -> None:
        self.dir = f"/tmp/swerl-git-{self.token}"
        self.tmp = f"/tmp/swerl-grade-{self.token}"
        self.git = safe_git(self.dir, self.sb.workdir)
        res = self.sh(f"mkdir -p -m 700 {self.tmp} && {shadow_setup(self.dir, self.sb.workdir, self.base)}")
        if res.exit_code != 0:
            raise SandboxError(f"could not read the repository at base_commit: {res.output.strip()[-300:]}")

    def sh(self, cmd: str, timeout_s: float = STEP_TIMEOUT_S) -> ExecResult:
        """Run `cmd` in the work tree; a timeout raises StepFailed."""
        res = self.sb.run_uncapped(f"cd {shlex.quote(self.sb.workdir)} && {cmd}", timeout_s)
        if res.timed_out:
            raise StepFailed(f"grading step timed out after {timeout_s:g}s: {cmd[-80:]}")
        return res

    def write(self, name: str, text: str) -> str:
        """Write a file into the grader's directory outside the repository; its path."""
        path = f"{self.tmp}/{name}"
        self.sb.write_file(path, text)
        return path

    def numstat(self, patch_path: str) -> list[str] | None:
        """The paths git reads in a patch file (both sides of renames and copies), or None when git cannot parse it."""
        res = self.sh(f"{self.git} apply --numstat -z {shlex.quote(patch_path)}")
        return parse_numstat_z(res.output) if res.exit_code == 0 else None

    def through_symlink(self, paths: list[str]) -> list[str]:
        """The paths a patch names whose leading directory is a symlink of the work tree. (A symlink the patch makes
        and then writes through is refused by git; GNU patch, harness mode, refuses one that leads out of the work
        tree, and `.git` is out of it while GNU patch runs.)"""
        leads = sorted({"/".join(p.split("/")[:i]) for p in paths for i in range(1, p.count("/") + 1)})
        if not leads:
            return []
        found = self.sh("for p in " + " ".join(shlex.quote(x) for x in leads) + '; do [ -L "$p" ] && echo "$p"; done')
        links = set(found.output.splitlines())
        return sorted(p for p in paths if any("/".join(p.split("/")[:i]) in links for i in range(1, p.count("/") + 1)))

    def apply(self, patch_path: str, mode: str) -> tuple[str | None, list[str]]:
        """(the method that applied the patch or None, the log of every try); the tree is reset between tries."""
        q = shlex.quote(patch_path)
        tries = [(GIT_APPLY, f"{self.git} apply --verbose {q}")]
        if mode == "harness":
            tries += [(GIT_3WAY, f"{self.git} apply --verbose --3way {q}"), (GNU_PATCH, self._gnu_patch(q))]
        log: list[str] = []
        self.before = self._status()  # what already differs in the image (build outputs, ...) is not the patch's
        self._keep_outside_git()
        self.sh(f"touch {self.tmp}/stamp")
        for name, cmd in tries:
            res = self.sh(cmd)
            if res.exit_code == 0:
                return name, log
            log.append(f"$ {name}\n{res.output}")
            self.sh(f"{self.git} read-tree --reset -u HEAD && {self.git} clean -fdq")
        return None, log

    def _gnu_patch(self, q: str) -> str:
        """GNU patch with `.git` out of the work tree; a patch that makes a `.git` is refused (exit 99)."""
        away = f"{self.tmp}/dotgit"
        return (
            f"mv .git {away} && {{ patch --batch --fuzz=5 -p1 --no-backup-if-mismatch -i {q}; rc=$?; "
            f'if [ -e .git ] || [ -L .git ]; then rm -rf .git; rc=99; echo "refused: the patch writes .git"; fi; '
            f'mv {away} .git; exit "$rc"; }}'
        )

    def _keep_outside_git(self) -> None:
        """Save the image's own test-infrastructure files that git does not track (an egg-info's entry points,
        __pycache__): a set-aside path among them goes back to the image's copy, not away."""
        res = self.sh(f"{self.git} ls-files -o -z")
        kept = sorted(p for p in res.output.split("\0") if p and infra.is_infra(p)) if res.exit_code == 0 else []
        if kept:
            listing = self.write("kept.list", "\0".join(kept) + "\0")
            res = self.sh(f"tar --null -T {listing} -cf {self.tmp}/kept.tar")
            if res.exit_code != 0:
                raise SandboxError(f"could not save the image's files outside git: {res.output.strip()[-300:]}")
        self.kept = set(kept)

    def _status(self) -> set[str]:
        st = self.sh(f"{self.git} status --porcelain=v1 -z --untracked-files=all --no-renames --ignore-submodules=all")
        if st.exit_code != 0:
            raise StepFailed(f"git status failed: {st.output.strip()[-300:]}")
        return {e for e in st.output.split("\0") if len(e) > 3}

    def changed(self) -> list[str]:
        """Paths the patch changed: git's status entries (tracked, deleted, untracked) that were not there before it
        applied, and every file or symlink whose inode changed since (ignored files included), `.git` left out."""
        after = self._status() - self.before
        found = self.sh(
            f"find . -path ./.git -prune -o \\( -type f -o -type l \\) -cnewer {self.tmp}/stamp -print0 2>/dev/null"
        )
        new = [p.removeprefix("./") for p in found.output.split("\0") if p.startswith("./")]
        return sorted(dict.fromkeys([*parse_status_z("\0".join(sorted(after))), *new]))

    def show(self, path: str) -> str | None:
        """A file's text at base_commit, None when absent."""
        res = self.sh(f"{self.git} cat-file blob {shlex.quote('HEAD:' + path)} 2>/dev/null")
        return res.output if res.exit_code == 0 else None

    def restore(self, paths: list[str]) -> None:
        """Each path back to base_commit, or to the image's own copy of a file outside git, or removed (file, symlink
        or directory) when neither has it."""
        if not paths:
            return
        lines = []
        first = sorted(
            dict.fromkeys(paths), key=lambda p: not p.endswith(".gitattributes")
        )  # attributes apply to the rest
        for p in first:
            q, spec = shlex.quote(p), shlex.quote("HEAD:" + p)
            parts = p.split("/")
            for i in range(1, len(parts)):  # a symlink in place of a directory: removed, never followed
                lead = shlex.quote("/".join(parts[:i]))
                lines.append(f"if [ -L {lead} ]; then rm -f -- {lead}; fi")
            lines.append(
                f"if {self.git} cat-file -e {spec} 2>/dev/null; then rm -rf -- {q}; "
                f"{self.git} checkout -q HEAD -- {q} || exit 1; else rm -rf -- {q} || exit 1; fi"
            )
            if p in self.kept:
                lines.append(f"tar -xf {self.tmp}/kept.tar -- {q} || exit 1")
        res = self.sh("( " + "\n".join(lines) + "\n)")
        if res.exit_code != 0:
            raise StepFailed(f"could not restore test files to base_commit: {res.output.strip()[-300:]}")

    def apply_test_patch(self, test_patch: str) -> str | None:
        """Apply the task's test_patch with git; an error message or None."""
        path = self.write("test.patch", test_patch)
        res = self.sh(f"{self.git} apply --verbose {shlex.quote(path)}")
        return None if res.exit_code == 0 else f"test_patch does not apply: {res.output.strip()[-300:]}"
