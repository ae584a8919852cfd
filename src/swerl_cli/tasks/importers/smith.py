"""SWE-smith rows: an `image_name` and no `test_patch`.

Their `patch` introduces the bug: it is kept as `bug_patch`, `patch` becomes its reverse (the gold fix) and
`patch_kind` is "bug". A row without `base_commit` gets `base_commit: "HEAD"`: every sandbox start applies
`bug_patch` to the image's HEAD and commits it (sandbox/__init__.py), no network needed. The test command runs
the files of FAIL_TO_PASS and PASS_TO_PASS in the image's conda env.
"""

from __future__ import annotations

from typing import Any

from swerl_cli.tasks.importers.swebench import SweBench

SMITH_PYTEST = "pytest --disable-warnings --color=no --tb=no --verbose"
_SWAPPED_HEADERS = (  # extended header lines whose reverse is the other line of the pair
    ("new file mode ", "deleted file mode "),
    ("deleted file mode ", "new file mode "),
    ("rename from ", "rename to "),
    ("rename to ", "rename from "),
)


def reverse_patch(patch: str) -> str:
    r"""The unified diff that undoes `patch` (old and new sides swapped), as `git apply -R` reads it.

    >>> reverse_patch("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n")
    '--- a/x\n+++ b/x\n@@ -1 +1 @@\n-new\n+old\n'
    """
    out: list[str] = []
    lines = patch.split("\n")
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("diff --git a/") and " b/" in ln:
            a, _, b = ln[len("diff --git a/") :].partition(" b/")
            out.append(f"diff --git a/{b} b/{a}")
        elif ln.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = ln[4:], lines[i + 1][4:]
            out.append("--- " + ("a/" + new[2:] if new.startswith("b/") else new))
            out.append("+++ " + ("b/" + old[2:] if old.startswith("a/") else old))
            i += 1
        elif ln.startswith("@@ ") and " @@" in ln[3:]:
            ranges, _, rest = ln[3:].partition(" @@")
            minus, _, plus = ranges.partition(" ")
            out.append(f"@@ -{plus[1:]} +{minus[1:]} @@{rest}")
        elif swap := next(((a, b) for a, b in _SWAPPED_HEADERS if ln.startswith(a)), None):
            out.append(swap[1] + ln[len(swap[0]) :])
        elif ln.startswith("index ") and ".." in ln:
            ids, sep, mode = ln[6:].partition(" ")
            x, _, y = ids.partition("..")
            out.append(f"index {y}..{x}{sep}{mode}")
        elif ln[:1] in ("+", "-"):  # a run of changed lines: removals first, as diff writes them
            run = []
            while i < len(lines) and lines[i][:1] in ("+", "-") and not lines[i].startswith(("--- ", "+++ ")):
                run.append(("-" if lines[i][0] == "+" else "+") + lines[i][1:])
                i += 1
            out += [r for r in run if r[0] == "-"] + [r for r in run if r[0] == "+"]
            continue
        else:
            out.append(ln)
        i += 1
    return "\n".join(out)


class SweSmith(SweBench):
    """SWE-smith rows (an `image_name`, no `test_patch`)."""

    name = "swe-smith"
    detect_rank = 20

    @classmethod
    def matches(cls, row: dict[str, Any]) -> bool:
        return bool(row.get("image_name") and not row.get("test_patch"))

    def prepare(self, row: dict[str, Any]) -> None:
        if row.get("base_commit") is None and "bug_patch" not in row:
            # The image holds the repository before the bug: the sandbox applies and commits it at start.
            row["base_commit"] = "HEAD"
            row["bug_patch"] = row.get("patch")

    def uses_conda(self, image: str) -> bool:
        return True  # every SWE-smith image holds the environment as the conda env `testbed`

    def test_command(self, row: dict[str, Any], files: list[str], install: dict[str, Any]) -> tuple[str, str]:
        ids = [*row.get("FAIL_TO_PASS", []), *row.get("PASS_TO_PASS", [])]
        tests = list(dict.fromkeys(str(t).split("::", 1)[0] for t in ids if isinstance(t, str)))
        return " ".join([SMITH_PYTEST, *tests]), "parse_log_pytest"

    def finish(self, row: dict[str, Any]) -> None:
        if isinstance(row.get("patch"), str) and row.get("patch_kind") != "bug":
            row["bug_patch"] = row["patch"]
            row["patch"] = reverse_patch(row["patch"])
            row["patch_kind"] = "bug"
