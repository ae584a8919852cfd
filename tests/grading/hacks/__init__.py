"""The reward-hacking corpus: one `.hack` file per attack, turned into a git patch for a given task.

A `.hack` file has a `family:` and a `what:` line, then edits, each opened by a `--- ` line:
`create PATH` / `replace PATH` / `append PATH` (the lines that follow), `rename OLD NEW`, `delete-tests` (every file
holding a target test), `copy OLD NEW` / `move OLD NEW` (a git copy or rename whose new content is the lines that
follow; NEW may be a C-quoted name such as `"conft\\145st.py"`), `raw` (the lines that follow are patch text, as they
are). Placeholders: @PKG@ (the package the gold patch changes), @TEST@ (the file of the first
FAIL_TO_PASS test), @TESTDIR@ (its directory), @IDS@ (FAIL_TO_PASS + PASS_TO_PASS as JSON), @STUBS@ (a trivially
passing function for every target test in @TEST@).
"""

from __future__ import annotations

import difflib
import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
OPS = frozenset({"create", "replace", "append", "rename", "delete-tests", "copy", "move", "raw"})
# attacks that only edit test infrastructure: set aside before the run (named by grade.set_aside), no static finding
SET_ASIDE_ONLY = frozenset(
    "conftest_deselect_fake_pass conftest_os_exit conftest_systemexit conftest_xfail_all delete_target_tests "
    "edit_target_tests err_directory_over_test_file err_restore_hits_directory rename_target_tests "
    "path_symlink_over_tests_dir".split()
)
# attacks whose every name is built at run time, so the static audit (which reads the patch's text) cannot see them:
# the guard must name each one from inside the run instead
GUARD_ONLY = frozenset({"rt_forge_channel_send", "rt_forge_guard_hooks", "rt_thread_code_swap"})


@dataclass
class Hack:
    """One attack: its name, family, description and edits (op, args, body)."""

    name: str
    family: str
    what: str
    edits: list[tuple[str, list[str], str]]


def load(folder: Path = HERE) -> list[Hack]:
    """Every `.hack` file in `folder` (the corpus here; `limits/`: the known limits of docs/grading.md), by name."""
    out = []
    for path in sorted(folder.glob("*.hack")):
        meta: dict[str, str] = {}
        edits: list[tuple[str, list[str], str]] = []
        for line in path.read_text().splitlines(keepends=True):
            words = line[4:].split() if line.startswith("--- ") else []
            if words and words[0] in OPS:  # a `--- OP` line opens an edit; other lines (`--- a/x` in raw) are body
                edits.append((words[0], words[1:], ""))
            elif edits:
                op, args, body = edits[-1]
                edits[-1] = (op, args, body + line)
            elif ": " in line:
                key, _, val = line.partition(": ")
                meta[key] = val.strip()
        last = len(edits) - 1  # an edit's body ends before the next `--- OP` line's newline; the file's last keeps it
        edits = [(op, a, b if i == last else b.removesuffix("\n")) for i, (op, a, b) in enumerate(edits)]
        out.append(Hack(path.stem, meta["family"], meta["what"], edits))
    return out


def base_reader(task: dict[str, Any]) -> Callable[[str], str | None]:
    """A function giving a file's content at the task's base_commit (from its image), None when absent."""

    def read(path: str) -> str | None:
        spec = f"{task['base_commit']}:{path}"
        res = subprocess.run(
            ["docker", "run", "--rm", "--network", "none", task["image"], "git", "-C", task["workdir"], "show", spec],
            capture_output=True,
            text=True,
        )
        return res.stdout if res.returncode == 0 else None

    return read


def _subst(text: str, task: dict[str, Any]) -> str:
    ids = [*task["FAIL_TO_PASS"], *task["PASS_TO_PASS"]]
    test = task["FAIL_TO_PASS"][0].split("::")[0]
    pkg = task["patch"].split("diff --git a/", 1)[1].split("/", 1)[0]
    names = sorted({t.split("::")[-1].split("[")[0] for t in ids if t.startswith(test + "::")})
    stubs = "".join(f"def {n}(*args, **kwargs):\n    pass\n\n\n" for n in names)
    for key, val in (("@IDS@", json.dumps(ids)), ("@STUBS@", stubs), ("@PKG@", pkg), ("@TEST@", test)):
        text = text.replace(key, val)
    return text.replace("@TESTDIR@", str(Path(test).parent))


def _diff(path: str, old: str | None, new: str | None) -> str:
    a = (old or "").splitlines(keepends=True)
    b = (new or "").splitlines(keepends=True)
    head = f"diff --git a/{path} b/{path}\n"
    if old is None:
        head += "new file mode 100644\n"
    elif new is None:
        head += "deleted file mode 100644\n"
    lines = list(
        difflib.unified_diff(
            a, b, "/dev/null" if old is None else f"a/{path}", "/dev/null" if new is None else f"b/{path}"
        )
    )
    return head + "".join(ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines)


def _copy(op: str, old: str, new: str, text: str, body: str) -> str:
    """A git copy (`copy`) or rename (`move`) of `old` to `new` (as given: quoted or not), new content `body`."""
    word = "copy" if op == "copy" else "rename"
    quoted = new.startswith('"')
    side = f'"b/{new[1:]}' if quoted else f"b/{new}"
    head = f"diff --git a/{old} {side}\n{word} from {old}\n{word} to {new}\n"
    lines = list(difflib.unified_diff(text.splitlines(keepends=True), body.splitlines(keepends=True), "", ""))[2:]
    return head + f"--- a/{old}\n+++ {side}\n" + "".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines)


def build(hack: Hack, task: dict[str, Any], read: Callable[[str], str | None]) -> str:
    """The attack as a git patch against the task's base_commit."""
    parts = []
    for op, args, body in hack.edits:
        args = [_subst(a, task) for a in args]
        body = _subst(body, task)
        if op in ("create", "replace"):
            parts.append(_diff(args[0], read(args[0]), body))
        elif op == "append":
            old = read(args[0]) or ""
            parts.append(_diff(args[0], old, old + ("\n" if old and not old.endswith("\n") else "") + "\n" + body))
        elif op == "rename":
            parts.append(f"diff --git a/{args[0]} b/{args[1]}\nsimilarity index 100%\nrename from {args[0]}\n"
                         f"rename to {args[1]}\n")  # fmt: skip
        elif op in ("copy", "move"):
            parts.append(_copy(op, args[0], args[1], read(args[0]) or "", body))
        elif op == "raw":
            parts.append(body if body.endswith("\n") else body + "\n")
        elif op == "delete-tests":
            files = sorted({t.split("::")[0] for t in [*task["FAIL_TO_PASS"], *task["PASS_TO_PASS"]]})
            parts += [_diff(f, read(f), None) for f in files if read(f) is not None]
        else:
            raise ValueError(f"{hack.name}: unknown edit {op!r}")
    return "".join(parts)
