"""A persistent bash speaking a tiny framed protocol over any byte transport (docker exec socket or pipes).

Each command is sent as `__swerl_run <nbytes> <s1> <s2>` followed by the raw command bytes; bash reads exactly
<nbytes>, evals them with stdin from /dev/null and stderr merged, then prints `<s1><s2> <rc> <cwd>`. The sentinel is
random per command and only ever appears joined on the output side, so output is exact even when it lacks a
trailing newline or contains framing text. `set -m` puts every foreground job in its own process group, so a
timeout can kill the command's groups without touching the shell.
"""

from __future__ import annotations

import base64
import dataclasses
import secrets
import shlex
import time
from typing import Protocol, TypeVar

from swerl_cli.core.errors import SandboxError
from swerl_cli.sandbox import lifecycle
from swerl_cli.sandbox.base import ExecResult, SandboxLimits
from swerl_cli.sandbox.gitops import diff_command, touched_files
from swerl_cli.streams.records import Task

_S = TypeVar("_S", bound="ShellSandbox")

# Sent once at shell start. Function and variable names are prefixed so user commands do not collide with them.
PRELUDE = r"""
set -m
exec 2>&1
trap ':' USR1
__swerl_body() {
  trap 'trap : USR1; return 124' USR1
  eval "$__swerl_c"
}
__swerl_run() {
  LC_ALL=C IFS= read -r -N "$1" __swerl_c
  jobs >/dev/null 2>&1  # flush job-control notices ("[1]+ Terminated ...") so they never leak into output
  { __swerl_body; } </dev/null
  local __swerl_rc=$?
  jobs >/dev/null 2>&1
  trap ':' USR1
  printf '%s%s %d %s\n' "$2" "$3" "$__swerl_rc" "$PWD"
}
__swerl_put() {
  mkdir -p -- "$(dirname -- "$4")" && head -c "$1" > "$4"
  local __swerl_rc=$?
  printf '%s%s %d %s\n' "$2" "$3" "$__swerl_rc" "$PWD"
}
printf 'SWERL_READY %d\n' $$
"""

TRUNC_MARKER = "\n[... {n} bytes truncated ...]\n"
SETTLE_S = 0.5  # after a timeout: how long a killed background job may take to die without its notice leaking


class Transport(Protocol):
    """Byte pipe to one bash process plus the out-of-band controls a timeout needs."""

    def send(self, data: bytes) -> None: ...

    def recv(self, timeout_s: float) -> bytes | None:
        """Next output bytes; b"" at EOF (shell gone); None when nothing arrived within timeout_s."""
        ...

    def kill_children(self, shell_pid: int, sig: str) -> None: ...

    def restart_shell(self) -> int | None:
        """Drop the current bash and start a new one; returns the old one's exit code when known."""
        ...

    def close(self) -> None: ...


class _Capped:
    """Collects output keeping the first and last `cap // 2` bytes and counting what fell in between."""

    def __init__(self, cap: int | None):
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, data: bytes) -> None:
        if self.cap is None:
            self.head += data
            return
        half = self.cap // 2
        room = half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            extra = len(self.tail) - (self.cap - half)
            if extra > 0:
                del self.tail[:extra]
                self.dropped += extra

    def text(self) -> str:
        if not self.dropped:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
        head = bytes(self.head).decode("utf-8", "replace")
        tail = bytes(self.tail).decode("utf-8", "replace")
        return head + TRUNC_MARKER.format(n=self.dropped) + tail


class Shell:
    """Runs framed commands through one persistent bash; `restart` is called when that bash dies."""

    def __init__(self, transport: Transport, output_cap_bytes: int | None = 100_000):
        self.t = transport
        self.cap = output_cap_bytes
        self.pid = 0
        self.cwd: str | None = None
        self._buf = bytearray()
        self._start()

    def _start(self) -> None:
        self._buf.clear()
        self.t.send(PRELUDE.encode())
        line = self._read_line(deadline=time.monotonic() + 30)
        if not line.startswith(b"SWERL_READY "):
            raise SandboxError(f"sandbox shell did not start: {line[:200]!r}")
        self.pid = int(line.split()[1])

    def _read_line(self, deadline: float) -> bytes:
        while b"\n" not in self._buf:
            chunk = self.t.recv(max(0.0, deadline - time.monotonic()))
            if chunk is None:
                raise SandboxError("sandbox shell did not answer in time")
            if chunk == b"":
                raise SandboxError("sandbox shell exited")
            self._buf += chunk
        i = self._buf.index(b"\n")
        line = bytes(self._buf[:i])
        del self._buf[: i + 1]
        return line

    def run(self, cmd: str, timeout_s: float = 60.0, *, cap: int | None | bool = True) -> ExecResult:
        """Run `cmd` in the shell (cwd/env persist); exact exit code and capped output."""
        res = self._run_once(cmd, timeout_s, cap)
        if res.timed_out:
            # The timeout's signals reach the command's background jobs after the shell has returned; bash reports
            # a job's death when it next waits for a foreground process, which would be inside the next command's
            # output. A hidden wait lets the jobs that die within SETTLE_S report here, where it is discarded.
            self._run_once(f"sleep {SETTLE_S} 2>/dev/null", SETTLE_S + 10, False)
        return res

    def _run_once(self, cmd: str, timeout_s: float, cap: int | None | bool) -> ExecResult:
        data = cmd.encode("utf-8")
        s1, s2 = "__SWERL_" + secrets.token_hex(8), secrets.token_hex(8) + "__"
        return self._exchange(f"__swerl_run {len(data)} {s1} {s2}\n".encode() + data, s1 + s2, timeout_s, cap)

    def put(self, path: str, data: bytes, timeout_s: float = 60.0) -> ExecResult:
        """Write `data` to `path` (parents created) through the shell; binary safe."""
        import shlex

        s1, s2 = "__SWERL_" + secrets.token_hex(8), secrets.token_hex(8) + "__"
        head = f"__swerl_put {len(data)} {s1} {s2} {shlex.quote(path)}\n".encode()
        return self._exchange(head + data, s1 + s2, timeout_s, True)

    def _exchange(self, payload: bytes, sentinel: str, timeout_s: float, cap: int | None | bool) -> ExecResult:
        t0 = time.monotonic()
        out = _Capped(self.cap if cap is True else (None if cap is False else cap))
        sent = sentinel.encode()
        self._buf.clear()
        self.t.send(payload)
        deadline = t0 + timeout_s
        timed_out = False
        kills = 0
        while True:
            i = self._buf.find(sent)
            if i >= 0 and b"\n" in self._buf[i:]:
                out.add(bytes(self._buf[:i]))
                j = self._buf.index(b"\n", i)
                rest = bytes(self._buf[i + len(sent) : j]).decode("utf-8", "replace").strip()
                del self._buf[: j + 1]
                rc_s, _, cwd = rest.partition(" ")
                self.cwd = cwd or self.cwd
                rc = 124 if timed_out else int(rc_s)
                return ExecResult(rc, out.text(), timed_out, time.monotonic() - t0)
            if i < 0 and len(self._buf) > len(sent):
                keep = len(sent) - 1
                out.add(bytes(self._buf[:-keep]))
                del self._buf[:-keep]
            now = time.monotonic()
            if now >= deadline:
                # Kill the command's process groups: TERM first, then KILL, repeatedly (a list of commands
                # starts new groups); a pure-builtin loop cannot be killed this way, so the shell is replaced.
                timed_out = True
                if kills >= 4:
                    return self._replace_shell(out, t0, "timed out and could not be interrupted")
                self.t.kill_children(self.pid, "TERM" if kills == 0 else "KILL")
                kills += 1
                deadline = now + (0.5 if kills < 4 else 2.0)
            chunk = self.t.recv(max(0.0, min(deadline - time.monotonic(), 5.0)))
            if chunk is None:
                continue
            if chunk == b"":
                out.add(bytes(self._buf))
                return self._replace_shell(out, t0, None, timed_out)
            self._buf += chunk

    def _replace_shell(self, out: _Capped, t0: float, why: str | None, timed_out: bool = True) -> ExecResult:
        """The shell died (`exit`, crash) or is stuck: start a fresh one in the last known cwd."""
        rc = self.t.restart_shell()
        self._start()
        if self.cwd:
            import shlex

            self.run(f"cd {shlex.quote(self.cwd)}", timeout_s=10)
        code = 124 if timed_out else (rc if isinstance(rc, int) else 255)
        return ExecResult(code, out.text(), timed_out, time.monotonic() - t0)


class ShellSandbox:
    """The Sandbox protocol over one persistent `Shell`: what the docker and local backends share.

    A backend's constructor sets `task`, `workdir`, `limits` and `_shell`, registers itself with `lifecycle`, and
    implements `_remove()` (stop the shell, delete the container or the temporary clone). `isolated` is False for a
    sandbox whose processes run on the host (local): nothing is installed outside the sandbox's own directories.
    `_scratch` rewrites swerl's fixed scratch paths (`/tmp/.swerl`, `/tmp/swerl-*`) in every command and path given
    to it, and `_unscratch` the outputs back: a container's /tmp is its own, a host sandbox points them at a
    directory of its own and still speaks their names.
    """

    task: Task
    workdir: str
    limits: SandboxLimits
    isolated: bool = True
    _shell: Shell | None = None
    _closed: bool = False

    def _scratch(self, text: str) -> str:
        return text

    def _unscratch(self, text: str) -> str:
        return text

    def _run(self, cmd: str, timeout_s: float, cap: int | bool) -> ExecResult:
        """One command, its scratch paths rewritten, and its output speaking the names the caller used."""
        res = self._sh().run(self._scratch(cmd), timeout_s, cap=cap)
        output = self._unscratch(res.output)
        return res if output == res.output else dataclasses.replace(res, output=output)

    def run(self, cmd: str, timeout_s: float = 60.0, *, cap: int | None = None) -> ExecResult:
        """Run a shell command; cwd and env persist; output capped (SandboxLimits.output_cap_bytes unless `cap`)."""
        return self._run(cmd, timeout_s, cap or True)

    def run_uncapped(self, cmd: str, timeout_s: float = 60.0) -> ExecResult:
        """Like `run` but returns the whole output (for reading files and logs)."""
        return self._run(cmd, timeout_s, False)

    def write_file(self, path: str, data: str | bytes) -> None:
        """Write a file (parents created), relative paths from the current directory."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        res = self._sh().put(self._scratch(path), raw)
        if res.exit_code != 0:
            raise SandboxError(f"could not write {path}: {res.output.strip()[:200]}")

    def read_file(self, path: str) -> bytes:
        """Read a file's bytes (base64 on the wire, so any content survives)."""
        res = self._sh().run(f"base64 -w0 -- {shlex.quote(self._scratch(path))}", 120, cap=False)
        if res.exit_code != 0:
            raise SandboxError(f"could not read {path}: {res.output.strip()[:200]}")
        return base64.b64decode(res.output)

    def diff(self) -> str:
        """`git diff` of the working tree (untracked files included) vs base_commit, test files excluded."""
        cmd = diff_command(self.task.base_commit, touched_files(self.task), self.workdir, secrets.token_hex(8))
        res = self._run(cmd, 120, False)
        if res.exit_code != 0:
            raise SandboxError(f"git diff failed: {res.output.strip()[:300]}")
        return res.output

    def close(self) -> None:
        """Remove the sandbox (idempotent)."""
        if self._closed:
            return
        self._closed = True
        lifecycle.unregister(id(self))
        self._remove()

    def _remove(self) -> None:
        raise NotImplementedError

    def _sh(self) -> Shell:
        if self._shell is None or self._closed:
            raise SandboxError("sandbox is closed")
        return self._shell

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
