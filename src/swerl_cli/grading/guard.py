"""Run a task's tests under the grading guard and read back a result the code under test could not forge.

The grader writes the wrapper and the pytest plugin (under a random module name) to a random directory under /tmp,
outside the repository, and a one-time key to its `private` directory. In a container sandbox the grader's shell is
root: the guard's files are root's and read-only to everyone else, `private` is mode 0700 and the key 0600, and the
wrapper runs the tests as an unprivileged user (`user`), so nothing the tests run can read the key or the result,
write the guard's files, or reach the wrapper's memory, fds or environment (docs/grading.md, "Threat model"). The
wrapper deletes the key before the tests start and signs the result it writes to `private/result` when they end.
After the run every process left behind is killed (container backends: the container holds nothing else).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from swerl_cli.core.errors import SandboxError
from swerl_cli.sandbox import ExecResult, Sandbox

_HERE = Path(__file__).parent
MARK = "SWERL-GUARD-RESULT "
# Kills every process but init and the shell, with shell builtins only: no fork needed, so a fork bomb that
# exhausted the pid limit is cleared too. A pass that stops everything, then kill passes until one finds nothing.
SWEEP = (
    "__swerl_s=STOP; for __swerl_i in 1 2 3 4 5 6 7 8 9 10 11 12; do __swerl_n=0; for __swerl_p in /proc/[0-9]*; do "
    '__swerl_p=${__swerl_p#/proc/}; case $__swerl_p in 1|$$) ;; *) kill -s $__swerl_s "$__swerl_p" 2>/dev/null '
    "&& __swerl_n=$((__swerl_n + 1));; esac; done; [ $__swerl_s = KILL ] && [ $__swerl_n = 0 ] && break; "
    "__swerl_s=KILL; done; true"
)
_OUTSIDE = (
    "timeout 30 find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp "
    "-o -path /var/tmp -o -path {work} \\) -prune -o -newer {mark} \\( -type f -o -type l \\) -print "
    "2>/dev/null | head -n 50"
)


@dataclass(slots=True)
class GuardRun:
    """What one guarded test run produced. `problem` is None when the result can be trusted as it is."""

    output: str
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    verified: bool = False
    hellos: int = 0
    ended: bool = False
    statuses: dict[str, str] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    broken: str | None = None
    outside_writes: list[str] = field(default_factory=list)
    uid: int | None = None  # the uid the tests ran as (the wrapper's header)
    oom_kills: int = 0  # processes the out-of-memory killer ended in the sandbox while the tests ran

    def problem(self, baseline: frozenset[str] = frozenset()) -> str | None:
        """The reason this run's results cannot give a verdict, or None. `baseline`: findings the unpatched
        run has too (the task's own tests do it), which are not held against the patch. A run that crashed or left
        no result after the out-of-memory killer ended one of its processes: `out_of_memory`."""
        why = self._problem(baseline)
        return "out_of_memory" if why in ("tests_crashed", "no_results") and self.oom_kills else why

    def _problem(self, baseline: frozenset[str]) -> str | None:
        if self.timed_out:
            return "timeout"
        if not self.verified or self.broken:
            return "results_untrusted" if self.verified or MARK in self.output else "no_results"
        if self.hellos == 0:
            return "no_results"
        if set(self.findings) - baseline:
            return "results_untrusted"
        if not self.ended:
            return "tests_crashed"
        if not self.statuses:
            return "no_results"
        return None


def install(sb: Sandbox) -> tuple[str, str, bytes]:
    """Write the guard into a fresh random directory: (directory, plugin module name, key). Its files are the
    sandbox shell's (root in a container), read-only to others; `private/` (key, result) is its own only."""
    guard_dir = f"/tmp/swerl-guard-{secrets.token_hex(8)}"
    module = f"swerl_guard_{secrets.token_hex(6)}"
    key = secrets.token_hex(32).encode()
    q = shlex.quote(guard_dir)
    made = sb.run(f"(umask 022 && mkdir -m 0755 {q} && mkdir -m 0700 {q}/private)", 60)
    if made.exit_code != 0:
        raise SandboxError(f"could not create the guard's directory: {made.output.strip()[:200]}")
    sb.write_file(f"{guard_dir}/{module}.py", (_HERE / "guard_plugin.py").read_bytes())
    sb.write_file(f"{guard_dir}/{module}_rt.py", (_HERE / "guard_runtime.py").read_bytes())
    sb.write_file(f"{guard_dir}/{module}_trust.py", (_HERE / "guard_trust.py").read_bytes())
    sb.write_file(f"{guard_dir}/wrapper.py", (_HERE / "guard_wrapper.py").read_bytes())
    sb.write_file(f"{guard_dir}/private/key", key)
    sb.run(f"chmod 0644 {q}/*.py && chmod 0600 {q}/private/key", 60)
    return guard_dir, module, key


def command(guard_dir: str, module: str, test_cmd: str, timeout_s: float, user: str | None = None) -> str:
    """The shell command that runs `test_cmd` through the wrapper (a start marker first, for the audit); with
    `user` the wrapper runs the tests as that user (`auto`: see guard_wrapper)."""
    q = shlex.quote
    py = '"$(command -v python3 || command -v python)"'
    as_user = f" {q(user)}" if user else ""
    return (
        f"touch {q(guard_dir + '/start')} && {py} {q(guard_dir + '/wrapper.py')} {q(guard_dir)} {q(module)} "
        f"{timeout_s:g} {q(test_cmd)}{as_user}"
    )


def run(sb: Sandbox, test_cmd: str, timeout_s: float, *, cap: int, sweep: bool, user: str | None = None) -> GuardRun:
    """Run the tests guarded and read the result back (verified); `sweep` kills leftovers (isolated backends only);
    `user`: the unprivileged user the tests run as (None: the sandbox shell's own, no separation)."""
    guard_dir, module, key = install(sb)
    res = sb.run(command(guard_dir, module, test_cmd, timeout_s, user), timeout_s + 60, cap=cap)
    if sweep:
        sb.run(SWEEP, 60)
    out = GuardRun(output=_strip_mark(res.output), exit_code=res.exit_code, duration_s=res.duration_s)
    out.timed_out = res.timed_out
    _read_result(sb, res, key, out, f"{guard_dir}/private/result")
    work = shlex.quote(sb.workdir)
    found = sb.run(_OUTSIDE.format(work=work, mark=shlex.quote(guard_dir + "/start")), 60)
    out.outside_writes = [ln for ln in found.output.splitlines() if ln.startswith("/") and guard_dir not in ln]
    return out


def _strip_mark(output: str) -> str:
    return "\n".join(ln for ln in output.splitlines() if not ln.startswith(MARK)).rstrip("\n") + "\n"


def _read_result(sb: Sandbox, res: ExecResult, key: bytes, out: GuardRun, path: str) -> None:
    """The wrapper's result at `path` (the grader's choice, in the wrapper's private directory), when the MAC the
    wrapper printed matches; lines the tests printed name other paths or carry a MAC they could not compute."""
    lines = [ln for ln in res.output.splitlines() if ln.startswith(MARK)]
    for line in reversed(lines):
        parts = line[len(MARK) :].split()
        if len(parts) != 2 or parts[0] != path:
            continue
        try:
            data = sb.read_file(parts[0])
        except Exception:  # a path the tests printed, or a file they removed: not the wrapper's result
            continue
        if hmac.compare_digest(hmac.new(key, data, hashlib.sha256).hexdigest(), parts[1]):
            out.verified = True
            _parse(data, out)
            return


def _parse(data: bytes, out: GuardRun) -> None:
    """Header, then the plugin's lines in order: any gap, repeat, or line that is not the plugin's breaks trust."""
    head, *lines = data.split(b"\n")
    meta: dict[str, Any] = orjson.loads(head)
    out.exit_code, out.timed_out = meta.get("exit_code"), bool(meta.get("timed_out"))
    out.duration_s = float(meta.get("duration_s") or out.duration_s)
    out.uid = meta.get("uid")
    out.oom_kills = int(meta.get("oom_kills") or 0)
    expect = 1
    for raw in lines:
        if not raw.strip():
            continue
        if out.ended:  # the plugin's `end` is its last line: anything after it was written by someone else
            out.broken = "a line in the result pipe after the plugin's last"
            return
        try:
            msg = orjson.loads(raw)
        except orjson.JSONDecodeError:
            out.broken = "a line in the result pipe is not the plugin's"
            return
        if not isinstance(msg, dict) or msg.get("n") != expect:
            out.broken = f"the result pipe's sequence broke at line {expect}"
            return
        expect += 1
        _apply(msg, out)


def _apply(msg: dict[str, Any], out: GuardRun) -> None:
    kind = msg.get("t")
    if kind == "hello":
        out.hellos += 1
        if out.hellos > 1:
            out.broken = "the plugin started twice (the test process re-executed itself)"
    elif kind == "finding":
        out.findings.append(str(msg.get("what")))
    elif kind == "end":
        out.ended = True
    elif kind == "test":
        tid, st, when = str(msg.get("id")), str(msg.get("st")), msg.get("when")
        if when == "teardown" and st == "ERROR":
            out.statuses[tid] = "ERROR"  # as the harness reads -rA: an error at teardown wins over the call
        elif when == "call" and out.statuses.get(tid) in ("ERROR", "SKIPPED", "XFAIL"):
            pass  # setup already decided it (a call after a failed setup does not happen)
        elif when == "collect":
            out.statuses.setdefault(tid, st)
        else:
            out.statuses[tid] = st
