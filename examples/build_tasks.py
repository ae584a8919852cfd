"""Build examples/tasks.jsonl and examples/toy-tasks.jsonl from the example repositories.

Each repository lives in `examples/repos/<name>/` (toy tasks for the RL learning test in `examples/toy/<name>/`):
`base/` is the repository at `base_commit`, `fix.patch` the gold fix (non-test files only), `test.patch` the new
tests, `meta.yaml` the problem statement and the FAIL_TO_PASS / PASS_TO_PASS ids. Optional `naive.patch` is a
tempting wrong fix that `verify_tasks.py` checks really breaks the tests listed in `NAIVE_BREAKS`.

The output is deterministic: the repository travels inside `setup` as a reproducible tar.gz (base64), and the
commit is made with a fixed identity and date, so `base_commit` is computed here, without git, and checked by
the last setup command inside the image.

    python examples/build_tasks.py          # rewrite the two JSONL files
    python examples/build_tasks.py --check  # exit 1 when they are stale
"""

from __future__ import annotations

import base64
import calendar
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import yaml

EXAMPLES = Path(__file__).resolve().parent
OUTPUTS = {"repos": EXAMPLES / "tasks.jsonl", "toy": EXAMPLES / "toy-tasks.jsonl"}
WORKDIR = "/testbed"
AUTHOR = ("swerl examples", "examples@swerl.invalid")
PYTEST = "pytest -rA --tb=no -p no:cacheprovider --color=no --junitxml=/tmp/swerl-junit.xml -o junit_family=xunit1"
IGNORED = {"__pycache__", ".pytest_cache"}
META_KEYS = {"problem_statement", "FAIL_TO_PASS", "PASS_TO_PASS", "created_at", "tags", "NAIVE_BREAKS", "hints_text"}


def repo_files(base: Path) -> dict[str, bytes]:
    """Files of a base repository by POSIX relative path, caches left out."""
    files = {}
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base)
        if path.is_dir() or IGNORED & set(rel.parts) or path.suffix == ".pyc":
            continue
        files[rel.as_posix()] = path.read_bytes()
    return files


def tar_gz(files: dict[str, bytes]) -> bytes:
    """A byte-for-byte reproducible tar.gz of `files` (fixed mtimes, owners and modes)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        dirs = sorted({str(Path(p).parent) for p in files} - {"."})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)


def _git_object(kind: str, body: bytes) -> bytes:
    return hashlib.sha1(f"{kind} {len(body)}\0".encode() + body).digest()


def _git_tree(files: dict[str, bytes]) -> bytes:
    """Hash of the git tree holding `files` (all regular, non-executable)."""
    entries: dict[str, tuple[bytes, bytes]] = {}
    subdirs: dict[str, dict[str, bytes]] = {}
    for path, data in files.items():
        head, _, rest = path.partition("/")
        if rest:
            subdirs.setdefault(head, {})[rest] = data
        else:
            entries[head] = (b"100644", _git_object("blob", data))
    for name, sub in subdirs.items():
        entries[name] = (b"40000", _git_tree(sub))
    # git orders entries by name, comparing a tree's name as if it ended in "/".
    order = sorted(entries, key=lambda n: n + "/" if entries[n][0] == b"40000" else n)
    body = b"".join(entries[n][0] + b" " + n.encode() + b"\0" + entries[n][1] for n in order)
    return _git_object("tree", body)


def git_commit(files: dict[str, bytes], message: str, epoch: int) -> str:
    """The commit hash `git commit` gives for `files` with the fixed identity, date and message."""
    ident = f"{AUTHOR[0]} <{AUTHOR[1]}> {epoch} +0000"
    body = f"tree {_git_tree(files).hex()}\nauthor {ident}\ncommitter {ident}\n\n{message}\n"
    return _git_object("commit", body.encode()).hex()


def patch_files(patch: str) -> list[str]:
    """Paths a git patch touches, in order."""
    out = []
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            path = line.split(" b/", 1)[1]
            if path not in out:
                out.append(path)
    return out


def setup_commands(name: str, files: dict[str, bytes], commit: str, epoch: int) -> list[str]:
    """Shell commands that turn swerl-base into the task image; the last one checks HEAD is `commit`."""
    blob = base64.b64encode(tar_gz(files)).decode()
    ident = (
        f"GIT_AUTHOR_NAME='{AUTHOR[0]}' GIT_AUTHOR_EMAIL={AUTHOR[1]} GIT_AUTHOR_DATE='@{epoch} +0000' "
        f"GIT_COMMITTER_NAME='{AUTHOR[0]}' GIT_COMMITTER_EMAIL={AUTHOR[1]} GIT_COMMITTER_DATE='@{epoch} +0000'"
    )
    return [
        f"rm -rf {WORKDIR} && mkdir -p {WORKDIR} && cd {WORKDIR} && echo {blob} | base64 -d | tar -xzf -",
        f"cd {WORKDIR} && git init -q -b main && git add -A && {ident} git commit -q -m 'Initial import of {name}'",
        f'test "$(git -C {WORKDIR} rev-parse HEAD)" = {commit} || {{ echo "setup: HEAD != {commit}" >&2; exit 1; }}',
    ]


def build_task(repo_dir: Path) -> dict:
    """One swerl.task/1 record from an example repository directory."""
    name = repo_dir.name
    meta = yaml.safe_load((repo_dir / "meta.yaml").read_text())
    unknown = set(meta) - META_KEYS
    if unknown:
        raise SystemExit(f"{repo_dir / 'meta.yaml'}: unknown keys {sorted(unknown)}")
    files = repo_files(repo_dir / "base")
    patch = (repo_dir / "fix.patch").read_text()
    test_patch = (repo_dir / "test.patch").read_text()
    if any(p.startswith("tests/") for p in patch_files(patch)):
        raise SystemExit(f"{repo_dir / 'fix.patch'}: the gold patch must not touch tests/")
    epoch = calendar.timegm(time.strptime(meta["created_at"], "%Y-%m-%dT%H:%M:%SZ"))
    commit = git_commit(files, f"Initial import of {name}", epoch)
    setup = setup_commands(name, files, commit, epoch)
    test_files = patch_files(test_patch)
    run_files = sorted({p for p in files if p.startswith("tests/") and p.endswith(".py")} | set(test_files))
    digest = hashlib.sha256(json.dumps(setup).encode()).hexdigest()[:12]
    return {
        "schema": "swerl.task/1",
        "instance_id": f"swerl-examples__{name}-1",
        "repo": f"swerl-examples/{name}",
        "base_commit": commit,
        "problem_statement": meta["problem_statement"],
        "hints_text": meta.get("hints_text", ""),
        "created_at": meta["created_at"],
        "version": "1",
        "patch": patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": list(meta["FAIL_TO_PASS"]),
        "PASS_TO_PASS": list(meta["PASS_TO_PASS"]),
        "image": f"swerl-example-{name}:{digest}",
        "workdir": WORKDIR,
        "test_cmd": f"{PYTEST} {' '.join(run_files)}",
        "test_files": test_files,
        "setup": setup,
        "tags": list(meta.get("tags", [])),
    }


def write_clone(repo_dir: Path, dest: Path) -> str:
    """A git repository of `repo_dir`'s base at `dest`, committed as the task image's is (so its HEAD is the task's
    base_commit): the clones `--sandbox local --repo-dir` reads. Returns the commit."""
    meta = yaml.safe_load((repo_dir / "meta.yaml").read_text())
    epoch = calendar.timegm(time.strptime(meta["created_at"], "%Y-%m-%dT%H:%M:%SZ"))
    files = repo_files(repo_dir / "base")
    for rel, data in files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)
    date = f"@{epoch} +0000"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(dest), "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1], "GIT_AUTHOR_DATE": date}
    env |= {"GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1], "GIT_COMMITTER_DATE": date}
    for cmd in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-q", "-m", f"Initial import of {repo_dir.name}"],
    ):
        subprocess.run(["git", *cmd], cwd=dest, env=env, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, capture_output=True, text=True, check=True)
    commit = git_commit(files, f"Initial import of {repo_dir.name}", epoch)
    if head.stdout.strip() != commit:
        raise SystemExit(f"{dest}: HEAD {head.stdout.strip()} != {commit}")
    return commit


def write_clones(root: Path) -> list[Path]:
    """Every example's clone under `root`, named owner__name as `--repo-dir` looks them up."""
    made = []
    for kind in OUTPUTS:
        for d in sorted(p for p in (EXAMPLES / kind).iterdir() if (p / "meta.yaml").exists()):
            dest = root / f"swerl-examples__{d.name}"
            if dest.exists():
                raise SystemExit(f"{dest} exists; choose an empty directory")
            dest.mkdir(parents=True)
            write_clone(d, dest)
            made.append(dest)
    return made


def render(kind: str) -> str:
    """The JSONL text for `kind` ("repos" -> tasks.jsonl, "toy" -> toy-tasks.jsonl)."""
    dirs = sorted(p for p in (EXAMPLES / kind).iterdir() if (p / "meta.yaml").exists())
    return "".join(json.dumps(build_task(d), ensure_ascii=False) + "\n" for d in dirs)


def main(argv: list[str]) -> int:
    """Write (or with --check, compare) the generated files; `--clones DIR`: write the examples' git clones."""
    if argv[:1] == ["--clones"] and len(argv) == 2:
        made = write_clones(Path(argv[1]))
        print(
            f"wrote {len(made)} clones under {argv[1]} (swerl ... --sandbox local --repo-dir {argv[1]})",
            file=sys.stderr,
        )
        return 0
    check = "--check" in argv
    stale = []
    for kind, out in OUTPUTS.items():
        text = render(kind)
        if check:
            if not out.exists() or out.read_text() != text:
                stale.append(out.name)
        else:
            out.write_text(text)
            print(f"wrote {out.relative_to(EXAMPLES.parent)} ({text.count(chr(10))} tasks)", file=sys.stderr)
    if stale:
        print(f"stale: {', '.join(stale)}; run python examples/build_tasks.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
