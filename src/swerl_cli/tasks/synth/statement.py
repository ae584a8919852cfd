"""The problem statement of a synthesized task: which tests fail and how, from the test run's own output.

It names the failing test (and how many others fail), then the tail of pytest's report for it (`--tb=short`: the
test's line, the frames below it and the `E` lines), and says that the tests are right. It never says what was
changed. Statuses come from swerl's grading parsers; this module only cuts the report text.
"""

from __future__ import annotations

import re

_SECTION = re.compile(r"^=+ (FAILURES|ERRORS) =+$")
_OTHER = re.compile(r"^=+ .* =+$")
_BLOCK = re.compile(r"^_{3,} (.+?) _{3,}$")
MAX_LINES = 14
MAX_CHARS = 1200


def head_line(test_id: str) -> str:
    """pytest's heading of a test in its report: `t.py::C::test_f[x]` -> `C.test_f[x]`."""
    _, _, rest = test_id.partition("::")
    return rest.replace("::", ".") if rest else test_id


def failure_blocks(log: str) -> dict[str, list[str]]:
    """{heading: report lines} of the FAILURES and ERRORS sections of a pytest log."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    inside = False
    for line in log.splitlines():
        if _SECTION.match(line):
            inside, current = True, None
            continue
        if inside and _OTHER.match(line) and not _BLOCK.match(line):
            inside, current = False, None
            continue
        if not inside:
            continue
        m = _BLOCK.match(line)
        if m:
            current = blocks.setdefault(m.group(1).removeprefix("ERROR at setup of ").strip(), [])
        elif current is not None:
            current.append(line.rstrip())
    return blocks


def _trim(lines: list[str]) -> list[str]:
    lines = [ln for ln in lines if ln.strip() and not ln.startswith(("----", "Captured "))]
    if len(lines) > MAX_LINES:
        lines = lines[-MAX_LINES:]
    while sum(len(ln) + 1 for ln in lines) > MAX_CHARS and len(lines) > 1:
        lines = lines[1:]
    return [ln[:300] for ln in lines]


def shows_line(statement: str, path: str, line: int) -> bool:
    """Whether the statement's report names `path:line:` as a frame (pytest's `--tb=short` form `path:N: in f`)."""
    return re.search(rf"(^|[\s/]){re.escape(path)}:{line}:", statement, re.MULTILINE) is not None


def problem_statement(failing: list[str], log: str) -> str:
    """The text an agent is given: the first failing test (in id order) with its report tail."""
    blocks = failure_blocks(log)
    shown = next((t for t in failing if head_line(t) in blocks), failing[0])
    text = [f"The test `{shown}` fails."]
    others = [t for t in failing if t != shown]
    if others:
        more = f" and {len(others) - 3} more" if len(others) > 3 else ""
        text[0] += f" Also failing: {', '.join(f'`{t}`' for t in others[:3])}{more}."
    report = _trim(blocks.get(head_line(shown), []))
    if report:
        text += ["", "```", *report, "```"]
    text += ["", "The tests are correct: fix the library code so that they pass."]
    return "\n".join(text) + "\n"
