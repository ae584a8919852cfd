"""The static audit without a sandbox: a patch applied with git to a copy of a base tree on this machine, and what
changed audited as the grader audits it (audit.py). Used to measure the audit's false positives on gold patches
(scripts/audit_gold_patches.py, tests/grading/test_audit.py).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from swerl_cli.grading.audit import RUNNER_DIRS, Change, Finding, audit_changes
from swerl_cli.sandbox.gitops import git_env, parse_numstat_z


def _git(cwd: Path, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    argv = ["git", "-c", "core.hooksPath=/dev/null", *args]
    return subprocess.run(argv, cwd=cwd, input=data, capture_output=True, env=git_env(), check=False)


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() and not path.is_symlink() else None


def audit_patch(base: Path, patch: str, root: str) -> list[Finding]:
    """Apply `patch` with `git apply` to a copy of the tree `base` and audit every path it names; the repository
    root inside the sandbox is `root` (writes under it are not outside). Raises ValueError when git refuses it."""
    with tempfile.TemporaryDirectory(prefix="swerl-audit-") as tmp:
        tree = Path(tmp) / "tree"
        shutil.copytree(base, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        data = patch.encode()
        named = _git(tree, "apply", "--numstat", "-z", "-", data=data)
        applied = _git(tree, "apply", "-", data=data)
        if named.returncode or applied.returncode:
            raise ValueError(f"git apply: {(named.stderr or applied.stderr).decode().strip()[-300:]}")
        changes = []
        for p in dict.fromkeys(parse_numstat_z(named.stdout.decode())):
            old, new = base / p, tree / p
            exists = new.exists() or new.is_symlink()
            changes.append(Change(p, _read(old), _read(new), exists, old.exists() or old.is_symlink()))
        dirs = [str(d.relative_to(base)) for d in base.rglob("*") if d.is_dir() and d.name in RUNNER_DIRS]
        return audit_changes(changes, root, dirs)


def from_patch_only(patch: str) -> Callable[[Path], None]:
    """For a row with no repository at hand: a function writing, into a directory, base files rebuilt from the
    patch's own old side (context and removed lines at their line numbers, blank lines between hunks), so that the
    patch applies and its added lines can be judged (a fragment that does not parse is searched line by line)."""
    files: dict[str, list[str]] = {}
    current: list[str] | None = None
    pos = 0
    for line in patch.splitlines():
        if line.startswith("--- "):
            name = line[4:].split("\t")[0]
            current = None if name == "/dev/null" else files.setdefault(name.removeprefix("a/"), [])
        elif line.startswith("@@ ") and current is not None:
            start = int(line.split()[1].lstrip("-").split(",")[0] or 1)
            current.extend([""] * max(0, start - 1 - len(current)))
            pos = start
        elif current is not None and line[:1] in (" ", "-") and not line.startswith("--- "):
            current.extend([""] * max(0, pos - 1 - len(current)))
            current.append(line[1:])
            pos += 1

    def write(base: Path) -> None:
        for name, lines in files.items():
            (base / name).parent.mkdir(parents=True, exist_ok=True)
            (base / name).write_text("".join(ln + "\n" for ln in lines))

    return write
