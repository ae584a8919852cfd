"""Outputs that are also inputs, refused before anything is touched (exit 2): `-o` naming an input file (the same
inode: hard links and symlinks too) and a stdout redirected onto an input (`swerl filter x >> x`)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from swerl_cli.core.errors import UsageError
from swerl_cli.streams.jsonl import STDIN
from swerl_cli.streams.stdio import records_fd


def same_file(a: str, b: str) -> bool:
    """True when two paths name the same existing file (hard links and symlinks included)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def refuse_own_input(flag: str, path: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]]) -> None:
    """A UsageError (exit 2) when the output `path` is one of the `inputs` (same inode: hard links and symlinks
    included), before anything is touched. A device (`/dev/null` read and written) is not a file to lose."""
    try:
        st: os.stat_result | None = os.stat(path)
    except OSError:
        st = None  # not there yet: the same path (after symlinks) is still the same file
    if st is not None and not stat.S_ISREG(st.st_mode):
        return
    for src in inputs:
        if src in (None, STDIN):
            continue
        try:
            same = os.path.samestat(st, os.stat(src)) if st is not None else _same_path(path, src)
        except OSError:
            same = _same_path(path, src)
        if same:
            raise UsageError(f"{flag} {path} is also an input ({src}): it would be overwritten; write to another file")


def refuse_stdout_input(inputs: Iterable[str | os.PathLike[str]]) -> None:
    """`swerl filter x >> x` (or `< x >> x`) would read the records it appends, without end: refused, exit 2."""
    try:
        # where records go: fd 1, or the real stdout kept aside while fd 1 points at stderr (stdio.py); a closed
        # stdout is held by /dev/null (cli._common.guard_std_streams)
        out = os.fstat(records_fd(1))
    except OSError:
        return
    if not stat.S_ISREG(out.st_mode):
        return
    for src in inputs:
        try:
            st = os.fstat(0) if src in (None, STDIN) else os.stat(src)
        except OSError:
            continue
        if os.path.samestat(out, st):
            name = "stdin" if src in (None, STDIN) else src
            raise UsageError(
                f"stdout is also an input ({name}): it would read what it writes; redirect to another file"
            )


def _same_path(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)
