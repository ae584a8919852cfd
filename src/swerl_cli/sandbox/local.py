"""LocalSandbox: a temporary clone of the task's repository and a persistent bash subprocess. NO isolation.

How it gets the repository: `repo_dir` (flag `--repo-dir`) is either a git repository of the task's repo or a
directory holding one per repo named `owner__name`. Only the history up to `base_commit` is fetched into a fresh
repository, so no later commit, tag or branch is present. The model's commands run as this user on this machine.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from swerl_cli.core.errors import ConfigError, SandboxError
from swerl_cli.core.plugins import Options
from swerl_cli.sandbox import lifecycle
from swerl_cli.sandbox.base import Sandbox, SandboxBackend, SandboxLimits
from swerl_cli.sandbox.shell import Shell, ShellSandbox
from swerl_cli.streams.records import Task

WARNING = "swerl: WARNING: the 'local' sandbox backend does NOT isolate: model commands run on this machine as you."
_warned = False


class _PipeTransport:
    """A bash subprocess (own session) reached through its stdin/stdout pipes."""

    def __init__(self, cwd: str, env: dict[str, str]):
        self.cwd, self.env = cwd, env
        self._open()

    def _open(self) -> None:
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=self.cwd,
            env=self.env,
            start_new_session=True,
        )

    def send(self, data: bytes) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (OSError, ValueError) as e:
            raise SandboxError(f"local shell is gone: {e}") from None

    def recv(self, timeout_s: float) -> bytes | None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout_s)
        if not ready:
            return None
        return os.read(fd, 1 << 16)

    def kill_children(self, shell_pid: int, sig: str) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(shell_pid, signal.SIGUSR1)
        for pid in _children(shell_pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, getattr(signal, f"SIG{sig}"))

    def restart_shell(self) -> int | None:
        self.close()
        code = self.proc.returncode
        self._open()
        return code

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        for fh in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                fh.close()  # type: ignore[union-attr]


def _children(ppid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == ppid:
                out.append(int(entry.name))
    return out


def find_repo(task: Task, repo_dir: str | None) -> Path:
    """The local git repository for `task`: repo_dir itself or repo_dir/owner__name."""
    if not repo_dir:
        raise ConfigError(
            "the local sandbox needs --repo-dir (a clone of the task's repo, or a dir of owner__name clones)"
        )
    root = Path(repo_dir)
    name = task.repo.replace("/", "__")
    below = [root / name] if name not in ("", ".", "..") else []  # a row's `repo` never leaves --repo-dir
    for cand in (*below, root):
        if (cand / ".git").exists() or (cand / "HEAD").exists():
            return cand
    raise ConfigError(f"{repo_dir}: no git repository for {task.repo} (looked for {task.repo.replace('/', '__')}/)")


ROOT_PREFIX = "swerl-local-"
# /tmp/.swerl[/...] and /tmp/swerl-* as whole paths (not /var/tmp/..., not a local sandbox's own root).
_PLAIN_PATH = re.compile(r"/[\w./-]*")
_SCRATCH_NAMES = r"/(?=\.swerl(?![\w.-])|swerl-(?!local-))"
_SCRATCH = re.compile(r"(?<![\w.~/-])/tmp" + _SCRATCH_NAMES)


class LocalSandbox(ShellSandbox):
    """The Sandbox protocol on this machine (development only); close() deletes the temporary clone. Its /tmp is
    the host's: TMPDIR and swerl's scratch paths point into the sandbox's own directory instead (`_scratch`), and
    nothing is installed outside it (`isolated` False)."""

    isolated = False

    def __init__(
        self,
        task: Task,
        limits: SandboxLimits | None = None,
        run_id: str | None = None,
        env: dict[str, str] | None = None,
        *,
        repo_dir: str | None = None,
    ):
        global _warned
        src = find_repo(task, repo_dir)  # first: a run that cannot start any sandbox says that, not the warning
        if not _warned:
            print(WARNING, file=sys.stderr, flush=True)  # noqa: T201 - the loud warning is the point
            _warned = True
        self.task = task
        self.limits = limits or SandboxLimits()
        # The scratch paths are spliced into shell text: a temporary directory whose path would need quoting
        # (TMPDIR with a space) is not used for them.
        tmp_base = tempfile.gettempdir()
        tmp_base = tmp_base if _PLAIN_PATH.fullmatch(tmp_base) else "/tmp"
        self.root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX, dir=tmp_base))
        self.workdir = str(self.root / "repo")
        self.tmp = str(self.root / "tmp")  # this sandbox's /tmp: TMPDIR, and swerl's scratch paths (_scratch)
        self._back = re.compile(re.escape(self.tmp) + _SCRATCH_NAMES)
        self._closed = False
        lifecycle.register(id(self), self._remove)
        try:
            os.mkdir(self.tmp, 0o700)
            _clone_at(src, Path(self.workdir), task.base_commit)
            shell_env = {**os.environ, **(env or {}), "TMPDIR": self.tmp}
            self._shell = Shell(_PipeTransport(self.workdir, shell_env), self.limits.output_cap_bytes)
        except BaseException:
            self.close()
            raise

    def _scratch(self, text: str) -> str:
        """swerl's fixed scratch paths under /tmp (the editor tools' /tmp/.swerl, a test_cmd's
        /tmp/swerl-junit.xml, /tmp/swerl-bug.patch, ...) name this sandbox's own directory: concurrent local
        sandboxes on one machine shared them (the editor state of one episode steered another's edits), and the
        host's /tmp was written."""
        return _SCRATCH.sub(lambda _: self.tmp + "/", text)

    def _unscratch(self, text: str) -> str:
        """Outputs name them as commands do (/tmp/swerl-junit.xml, not this sandbox's directory): what a caller
        reads back (the guard's result path, pytest's `generated xml file`) is what it wrote."""
        return self._back.sub("/tmp/", text) if self.tmp in text else text

    def _remove(self) -> None:
        shell = getattr(self, "_shell", None)
        if shell is not None:
            shell.t.close()
        shutil.rmtree(self.root, ignore_errors=True)


def _clone_at(src: Path, dest: Path, commit: str) -> None:
    """A fresh repository holding only `commit` and its history, checked out on branch main."""
    cmds = [
        ["git", "init", "-q", "-b", "main", str(dest)],
        ["git", "-C", str(dest), "fetch", "-q", "--no-tags", "--", str(src.resolve()), commit],
        ["git", "-C", str(dest), "checkout", "-q", "-B", "main", "FETCH_HEAD"],
    ]
    for cmd in cmds:
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise SandboxError(f"local sandbox: {' '.join(cmd[:4])} failed: {res.stderr.strip()[:300]}")
    shutil.rmtree(dest / ".git" / "logs", ignore_errors=True)
    (dest / ".git" / "FETCH_HEAD").unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class LocalOptions(Options):
    """Where the task repositories are (`--repo-dir`, read by name from a command's settings)."""

    repo_dir: str | None = None


REPO_DIR_HELP = (
    "Repository clones for --sandbox local: a git repository of the task's repo, or a directory of them named "
    "owner__name (the examples': python examples/build_tasks.py --clones DIR)."
)


class LocalBackend(SandboxBackend):
    """Sandboxes as temporary clones on this machine (`--sandbox local`): no images, no isolation, nothing to prune
    (a clone lives in a temporary directory removed on close)."""

    name = "local"
    uses_images = False
    Options = LocalOptions

    def check_ready(self) -> None:
        """The local backend clones from `repo_dir`: without it (or with a path that is not a directory) no
        sandbox can start."""
        repo_dir = self.options.repo_dir
        if not repo_dir:
            raise ConfigError(f"field 'repo_dir': --sandbox local needs --repo-dir. {REPO_DIR_HELP}")
        if not Path(repo_dir).is_dir():
            raise ConfigError(f"field 'repo_dir': {repo_dir} is not a directory")

    def start(
        self, task: Task, limits: SandboxLimits | None, run_id: str | None, env: dict[str, str] | None
    ) -> Sandbox:
        """A LocalSandbox of `task` from the configured repo_dir."""
        return LocalSandbox(task, limits, run_id, env, repo_dir=self.options.repo_dir)
