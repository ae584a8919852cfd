"""Test-log parsers: pytest's `-rA` short summary and JUnit XML -> {test_id: status}.

Rules (notes/swe-formats-facts.md §3.3): only the short-summary section is read (captured output in PASSES
sections cannot spoof a status); the status is the first word; the node id runs to the first " - " outside
brackets (so parametrized ids keep spaces, brackets and unicode); folded `SKIPPED [n] file:line` lines are
dropped; a file-level `ERROR path` is kept as the bare path and expanded by the grader.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

STATUSES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SUMMARY = re.compile(r"^=+ short test summary info =+$")
_FINAL = re.compile(r"^=+ .*\b(passed|failed|error|errors|skipped|xfailed|xpassed|deselected|no tests ran)\b.* =+$")
_PROGRESS = re.compile(r"^(\S+(?:\[.*\])?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?:\s+\[\s*\d+%\])?$")


def node_id(rest: str) -> str:
    """The node id at the start of a summary line's remainder.

    >>> node_id("t.py::f[a - b] - AssertionError")
    't.py::f[a - b]'
    """
    depth = 0
    for i, ch in enumerate(rest):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif depth == 0 and ch == " ":
            if rest.startswith(" - ", i) or "::" in rest[:i] or rest[:i].endswith(".py"):
                return rest[:i]
    if depth > 0 and " - " in rest:  # unbalanced brackets in a parameter: best effort
        return rest.split(" - ", 1)[0]
    return rest.rstrip()


def parse_pytest_log(log: str) -> dict[str, str]:
    """{node id: status} from the last `short test summary info` section; `-v` progress lines if there is none."""
    lines = [_ANSI.sub("", ln).rstrip("\r") for ln in log.splitlines()]
    start = None
    for i, ln in enumerate(lines):
        if _SUMMARY.match(ln.strip()):
            start = i + 1
    if start is None:
        return _parse_progress(lines)
    out: dict[str, str] = {}
    for ln in lines[start:]:
        s = ln.strip()
        if _FINAL.match(s):
            break
        word, _, rest = s.partition(" ")
        if word not in STATUSES or not rest:
            continue  # interleaved output, old-pytest XFAIL reason lines, blank lines
        if word == "SKIPPED" and rest.startswith("["):
            continue  # folded skips: `[n]` is a count and the location is not a test id
        for prefix in ("at setup of ", "at teardown of "):
            if rest.startswith(prefix):
                rest = rest[len(prefix) :]
        tid = node_id(rest)
        if tid:
            # A test can appear twice (e.g. PASSED, then ERROR at teardown): the worse outcome wins.
            if out.get(tid) not in ("FAILED", "ERROR"):
                out[tid] = word
    return out


def _parse_progress(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for ln in lines:
        m = _PROGRESS.match(ln.strip())
        if m and "::" in m.group(1):
            out[m.group(1)] = m.group(2)
    return out


def parse_junit(xml_text: str, expected: list[str] | None = None) -> dict[str, str]:
    """{node id: status} from pytest JUnit XML (xunit1 or xunit2); ids rebuilt from file/classname + name."""
    root = ET.fromstring(xml_text)
    by_key = {_junit_key(t): t for t in (expected or [])}
    out: dict[str, str] = {}
    for case in root.iter("testcase"):
        cls, name = case.get("classname", ""), case.get("name", "")
        tid = by_key.get((cls, name)) or _rebuild(case.get("file"), cls, name)
        status = "PASSED"
        for child in case:
            if child.tag == "failure":
                status = "FAILED"
            elif child.tag == "error":
                status = "ERROR"
            elif child.tag == "skipped":
                status = "XFAIL" if child.get("type") == "pytest.xfail" else "SKIPPED"
            if status != "PASSED":
                break
        if out.get(tid) not in ("FAILED", "ERROR"):
            out[tid] = status
    return out


def _junit_key(test_id: str) -> tuple[str, str]:
    """(classname, name) pytest writes for a node id: `a/t.py::C::f[x]` -> ("a.t.C", "f[x]")."""
    path, _, rest = test_id.partition("::")
    parts = rest.split("::") if rest else [""]
    mod = path[:-3] if path.endswith(".py") else path
    return ".".join([mod.replace("/", "."), *parts[:-1]]), parts[-1]


def _rebuild(file: str | None, classname: str, name: str) -> str:
    if file:
        mod = file[:-3].replace("/", ".") if file.endswith(".py") else file
        classes = classname[len(mod) + 1 :] if classname.startswith(mod + ".") else ""
        return "::".join([file, *[c for c in classes.split(".") if c], name])
    return f"{classname}::{name}" if classname else name
