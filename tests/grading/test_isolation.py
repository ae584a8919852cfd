"""What the tests' user cannot reach, tried from inside a graded run on the real engine (docs/grading.md, "Threat
model"), and the tests' own out-of-memory kill scored as the patch's fault. The runtime attacks of the corpus
(tests/grading/hacks/rt_*.hack) try the same claims as attacks; here each claim is probed directly."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from swerl_cli.grading.grade import GradeConfig, grade_patch
from swerl_cli.grading.guard import GuardRun, _parse
from swerl_cli.streams.records import Task

# Run by the task's test command as the tests' user, before pytest: one `PROBE name value` line per claim.
PROBE = r"""
import os, re, signal, sys

def attempt(name, fn):
    try:
        fn()
        print("PROBE", name, "allowed")
    except OSError as e:
        print("PROBE", name, type(e).__name__)

def ancestor(word):
    pid = os.getppid()
    while pid > 1:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
        if any(a.endswith(word) for a in argv):
            return pid, argv
        with open("/proc/%d/stat" % pid) as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return None, []

w, argv = ancestor(b"/wrapper.py")
gdir = [a for a in argv if a.endswith(b"/wrapper.py")][0][: -len(b"/wrapper.py")].decode()
print("PROBE uid", os.getuid(), "wrapper_uid", os.stat("/proc/%d" % w).st_uid)
attempt("wrapper_mem", lambda: open("/proc/%d/mem" % w, "rb").read(1))
attempt("wrapper_environ", lambda: open("/proc/%d/environ" % w, "rb").read())
attempt("wrapper_fds", lambda: os.listdir("/proc/%d/fd" % w))
attempt("wrapper_stdout", lambda: os.open("/proc/%d/fd/1" % w, os.O_WRONLY))
attempt("wrapper_signal", lambda: os.kill(w, signal.SIGSTOP))
attempt("private_dir", lambda: os.listdir(gdir + "/private"))
attempt("key_file", lambda: open(gdir + "/private/key", "rb").read())
attempt("result_file", lambda: open(gdir + "/private/result", "wb"))
plugin = [n for n in os.listdir(gdir) if n.startswith("swerl_guard_")][0]
attempt("guard_file", lambda: open(gdir + "/" + plugin, "a"))
attempt("guard_dir", lambda: open(gdir + "/sitecustomize.py", "w"))
attempt("repo_write", lambda: open("probe-wrote.txt", "w").write("x"))
hexes = [k for k, v in os.environ.items() if re.search(r"[0-9a-f]{64}", v)]
home_mine = os.stat(os.environ["HOME"]).st_uid == os.getuid()
print("PROBE env_hex", len(hexes), "safe_path", sys.flags.safe_path, "home_mine", home_mine)
"""


def _new_file(path: str, text: str) -> str:
    body = "".join("+" + line + "\n" for line in text.splitlines())
    n = len(text.splitlines())
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{n} @@\n{body}"


def _probes(log: str) -> dict[str, str]:
    out = {}
    for line in log.splitlines():
        if line.startswith("PROBE "):
            words = line.split()[1:]
            out.update(zip(words[::2], words[1::2], strict=False))
    return out


@pytest.mark.docker
def test_the_tests_user_reaches_no_key_result_wrapper_or_guard_file(toy_t: Task) -> None:
    task = replace(toy_t, instance_id="toy-probe", test_cmd="python3 probe.py && " + toy_t.test_cmd)
    # harness mode: the static audit (grading/audit.py) would score the probe's /proc reads 0 in strict mode before
    # the OS had a say; here the OS permissions themselves are under test
    cfg = GradeConfig(mode="harness")
    g = grade_patch(task, toy_t.patch + _new_file("probe.py", PROBE), cfg, "pytest-isolation")
    p = _probes(g["log_tail"])
    assert g["status"] == "resolved", (g["error"], g["log_tail"][-2000:])
    assert p["wrapper_uid"] == "0", p
    assert p["uid"] != "0", p
    denied = ("wrapper_mem", "wrapper_environ", "wrapper_fds", "wrapper_stdout", "wrapper_signal", "private_dir",
              "key_file", "result_file", "guard_file", "guard_dir")  # fmt: skip
    assert {k: p[k] for k in denied} == dict.fromkeys(denied, "PermissionError"), p
    assert (p["repo_write"], p["env_hex"], p["safe_path"], p["home_mine"]) == ("allowed", "0", "True", "True"), p


def test_a_line_after_the_plugins_end_breaks_trust_and_oom_kills_name_the_crash() -> None:
    head = json.dumps({"exit_code": 0, "timed_out": False, "duration_s": 0.1, "uid": 1000, "oom_kills": 0})
    msgs = [{"t": "hello"}, {"t": "test", "id": "a::t", "when": "call", "st": "FAILED"}, {"t": "end", "exit": 1}]
    after = {"t": "test", "id": "a::t", "when": "call", "st": "PASSED"}
    lines = [json.dumps({**m, "n": i + 1}) for i, m in enumerate([*msgs, after])]
    run = GuardRun(output="", verified=True)
    _parse("\n".join([head, *lines[:3]]).encode(), run)
    assert (run.problem(), run.statuses, run.uid) == (None, {"a::t": "FAILED"}, 1000)
    run = GuardRun(output="", verified=True)
    _parse("\n".join([head, *lines]).encode(), run)
    assert (run.problem(), run.statuses) == ("results_untrusted", {"a::t": "FAILED"}), run.broken
    crashed = head.replace('"oom_kills": 0', '"oom_kills": 1')
    run = GuardRun(output="", verified=True)
    _parse("\n".join([crashed, *lines[:2]]).encode(), run)
    assert run.problem() == "out_of_memory"
    run = GuardRun(output="", verified=True)
    _parse("\n".join([head, *lines[:2]]).encode(), run)
    assert run.problem() == "tests_crashed"


@pytest.mark.docker
def test_the_tests_own_out_of_memory_kill_is_the_patchs_fault(toy_t: Task) -> None:
    hog = (
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n"
        "+    bytearray(1 << 30)\n     return a - b\n"
    )
    cfg = GradeConfig(memory_mb=96, timeout_s=120)
    g = grade_patch(toy_t, hog, cfg, "pytest-oom")
    assert (g["status"], g["reward"], g["reason"]) == ("unresolved", 0.0, "out_of_memory"), (g["error"], g["log_tail"])
    assert g["control"]["problem"] is None
    assert grade_patch(toy_t, toy_t.patch, cfg, "pytest-oom-gold")["status"] == "resolved"
