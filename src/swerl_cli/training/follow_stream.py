"""The stream side of `swerl dapo --follow`: graded records read as they arrive, grouped, aged in optimizer steps.

    for loc in tail_records("graded.jsonl", idle_timeout_s=60):   # a growing file (or "-": stdin until EOF)
        buf.add(loc)                                              # complete groups move to buf.ready
    step = group_step(members, versions)                          # the oldest policy version that sampled it

A record's policy version is the oldest `turns[].policy_version` it has (falling back to `policy.version`), mapped to
the optimizer step that produced it through `versions` (version string -> global step, the trainer's own record of
what it pushed). A version it never pushed counts as the starting model's (step 0). A group ages as one: its step is
its oldest member's, so staleness = current step - group step (prime-rl's rule).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from swerl_cli.core.errors import InputError
from swerl_cli.streams.graded import GroupKey, group_key
from swerl_cli.streams.jsonl import MAX_LINE_BYTES, MAX_LINE_ENV, STDIN, parse_line, read_records
from swerl_cli.streams.records import Located

Key = GroupKey


def tail_records(
    src: str, *, poll_s: float = 0.2, idle_timeout_s: float | None = None, stop: Callable[[], bool] | None = None
) -> Iterator[Located]:
    """Complete JSONL lines of `src` as they are appended; a trailing line without its newline waits for it.

    `src` is a file, a directory (every `*.jsonl` file in it, files that appear later included: one per writer), a
    FIFO (followed like a file while writers come and go) or "-" (stdin, until EOF). A torn last line (a writer
    killed mid-line) is never parsed: it waits until a restarted writer cuts it (`--resume`) and appends whole lines
    in its place. Ends at stdin's EOF, when `stop()` is true, or after `idle_timeout_s` seconds with no new line
    (None: never), also while a FIFO has no writer yet. Any other special file is an InputError.
    """
    if src == STDIN:
        yield from read_records(STDIN)
        return
    files: _Tails | _Fifo = _Fifo(src) if _is_fifo(src) else _Tails(src)
    last = time.monotonic()
    try:
        while stop is None or not stop():
            got = False
            for loc in files.poll():
                got = True
                yield loc
            if got:
                last = time.monotonic()
                continue
            if idle_timeout_s is not None and time.monotonic() - last > idle_timeout_s:
                return
            time.sleep(poll_s)
    finally:
        files.close()


class _Tails:
    """The open files of a followed file or directory, each at the start of its first line not yet read."""

    def __init__(self, src: str):
        self.src, self.is_dir = src, os.path.isdir(src)
        self.open: dict[str, tuple[BinaryIO, list[int]]] = {}  # path -> (handle, [lines read])

    def poll(self) -> Iterator[Located]:
        paths = sorted(str(p) for p in Path(self.src).glob("*.jsonl")) if self.is_dir else [self.src]
        for path in paths:
            if path in self.open and _replaced(path, self.open[path][0]):
                fh, n = self.open.pop(path)
                was_read = fh.tell() > 0 or n[0] > 0
                fh.close()
                if was_read:  # an empty file removed and made again (a writer that failed at once) is fine
                    raise InputError(path, n[0], None, "replaced by another file after lines were read from it")
            if path not in self.open:
                try:
                    self.open[path] = (_open_regular(path), [0])
                except FileNotFoundError:  # listed, then removed: an empty output its writer cleaned up
                    continue
            fh, n = self.open[path]
            yield from _complete_lines(path, fh, n)

    def close(self) -> None:
        for fh, _ in self.open.values():
            fh.close()


def _is_fifo(path: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def _open_regular(path: str) -> BinaryIO:
    """`path` opened for reading when it is a regular file. A plain open of a FIFO blocks until a writer opens it
    (past any --idle-timeout), and a device is no file a writer appends to: both are an InputError (exit 3)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # returns at once, whatever the file is
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else None
        why = f"is {kind or 'not a regular file'}: --follow reads a regular file, a directory of them, a FIFO named as"
        why += " the input, or -"
        raise InputError(path, None, None, why)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


class _Fifo:
    """A named pipe followed like a file. Opened without waiting for a writer (O_NONBLOCK: a plain open blocks until
    one appears, and `--idle-timeout` never got a say); read as writers come and go; a line is parsed once whole,
    and one longer than the line limit (streams/jsonl.py) is an InputError."""

    def __init__(self, src: str):
        self.src, self.n, self.buf = src, 0, bytearray()
        self.limit = int(os.environ.get(MAX_LINE_ENV) or MAX_LINE_BYTES)
        self.fd = os.open(src, os.O_RDONLY | os.O_NONBLOCK)

    def poll(self) -> Iterator[Located]:
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:  # a writer, no data yet
                return
            if not chunk:  # no writer now (none yet, or every one closed): wait for the next
                return
            self.buf += chunk
            if b"\n" in chunk:
                *lines, rest = bytes(self.buf).split(b"\n")
                self.buf = bytearray(rest)
                for line in lines:
                    self.n += 1
                    if line.strip():
                        yield parse_line(self.src, self.n, line)
            if len(self.buf) > self.limit:
                why = f"cannot read: line longer than {self.limit} bytes (the limit; {MAX_LINE_ENV} raises it)"
                raise InputError(self.src, self.n + 1, None, why)

    def close(self) -> None:
        os.close(self.fd)


def _replaced(path: str, fh: BinaryIO) -> bool:
    try:
        return not os.path.samestat(os.stat(path), os.fstat(fh.fileno()))
    except FileNotFoundError:
        return False  # gone for now: keep reading the open file


def _complete_lines(path: str, fh: BinaryIO, n: list[int]) -> Iterator[Located]:
    while True:
        pos = fh.tell()
        if os.fstat(fh.fileno()).st_size < pos:
            raise InputError(path, n[0], None, "shrank below the lines already read (rewritten, not appended to)")
        line = fh.readline()
        if not line.endswith(b"\n"):
            fh.seek(pos)  # nothing, half a line still being written, or a dead writer's torn line: wait
            return
        n[0] += 1
        if line.strip():
            yield parse_line(path, n[0], line)


def record_id(loc: Located) -> str:
    """The record's `id`, else `{instance_id}/{run}/{sample}` (what `consumed` stores)."""
    rid = loc.obj.get("id")
    if isinstance(rid, str) and rid:
        return rid
    return f"{loc.obj.get('instance_id')}/{loc.obj.get('run')}/{loc.obj.get('sample')}"


def version_key(version: str) -> str:
    """Versions that name a directory compare by its resolved path (a checkpoint named two ways is one version)."""
    return str(Path(version).resolve()) if os.path.isdir(version) else version


def record_versions(loc: Located) -> list[str]:
    """Every policy version that sampled a turn of this record (the record's own when no turn has one)."""
    turns = loc.obj.get("turns") if isinstance(loc.obj.get("turns"), list) else []
    found = [t["policy_version"] for t in turns if isinstance(t, dict) and isinstance(t.get("policy_version"), str)]
    if not found:
        policy = loc.obj.get("policy") if isinstance(loc.obj.get("policy"), dict) else {}
        v = policy.get("version")
        found = [v] if isinstance(v, str) else []
    return found


def group_step(members: list[Located], versions: dict[str, int]) -> int:
    """The global optimizer step of the oldest version that sampled any turn of the group (unknown: step 0)."""
    steps = [versions.get(version_key(v), 0) for m in members for v in record_versions(m)]
    return min(steps, default=0)


class GroupBuffer:
    """Records collected per (run, instance_id) until `group_size` are in; complete groups queue in `ready`."""

    def __init__(self, group_size: int, consumed: set[str]):
        self.group_size = group_size
        self.consumed = consumed
        self.open: dict[Key, list[Located]] = {}
        self.ready: list[list[Located]] = []
        self.skipped = 0  # records already consumed by an earlier run of this trainer (a restart re-reads them)
        self.duplicates = 0  # ids already waiting in an open group (a collector re-run appended them again)

    def add(self, loc: Located) -> None:
        if record_id(loc) in self.consumed:
            self.skipped += 1
            return
        members = self.open.setdefault(group_key(loc), [])
        if any(record_id(m) == record_id(loc) for m in members):
            self.duplicates += 1  # the first copy counts; training one id twice is what must never happen
            return
        members.append(loc)
        if len(members) >= self.group_size:
            self.ready.append(self.open.pop(group_key(loc)))


def staleness_weight(loc: Located) -> float:
    """The record's `staleness_weight` (set by `dapo --follow --stale-decay`; 1 when absent): `swerl dapo` multiplies
    the sample's advantage by it, so every token term of the sample is scaled by it (the DAPO loss and its
    corrections are linear in the advantage; clipping acts on the ratio)."""
    w = loc.obj.get("staleness_weight", 1.0)
    if isinstance(w, bool) or not isinstance(w, int | float) or not 0.0 < w <= 1.0:
        raise loc.error("staleness_weight", f"must be a number in (0, 1], got {w!r}")
    return float(w)
