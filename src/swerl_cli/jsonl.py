"""JSONL record streams: located reading (path, `-`, `.gz`) and whole-line, atomic writing."""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from swerl_cli.errors import InputError
from swerl_cli.records import Located

STDIN = "-"


def _open_binary(src: str) -> tuple[IO[bytes], str]:
    if src == STDIN:
        return sys.stdin.buffer, "<stdin>"
    path = Path(src)
    try:
        fh: IO[bytes] = open(path, "rb")  # closed by the caller
    except FileNotFoundError:
        raise InputError(src, None, None, "no such file") from None
    except IsADirectoryError:
        raise InputError(src, None, None, "is a directory, expected a JSONL file") from None
    except PermissionError:
        raise InputError(src, None, None, "permission denied") from None
    if src.endswith(".gz"):
        fh = gzip.GzipFile(fileobj=fh, mode="rb")  # type: ignore[assignment]
    return fh, src


def iter_lines(src: str) -> Iterator[tuple[str, int, bytes, bool]]:
    """Yield (source name, line number, raw line without newline, had_newline) for non-blank lines."""
    fh, name = _open_binary(src)
    try:
        n = 0
        try:
            for raw in fh:
                n += 1
                has_nl = raw.endswith(b"\n")
                line = raw.rstrip(b"\r\n") if has_nl else raw
                if line and not line.isspace():
                    yield name, n, line, has_nl
        except (OSError, EOFError) as e:  # a corrupt or truncated .gz
            raise InputError(name, n + 1, None, f"cannot read: {e}") from None
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def iter_raw_fh(fh: Iterable[bytes], name: str) -> Iterator[tuple[str, int, bytes]]:
    """Yield (source name, line number, raw line with its newline if any) for non-blank lines of a binary file."""
    n = 0
    try:
        for n, raw in enumerate(fh, 1):  # n is used after the loop for the error line
            if not raw.isspace():
                yield name, n, raw
    except (OSError, EOFError) as e:  # a corrupt or truncated .gz, or an unreadable device
        raise InputError(name, n + 1, None, f"cannot read: {e}") from None


def iter_raw(src: str) -> Iterator[tuple[str, int, bytes]]:
    """Raw lines of a path (`.gz` decompressed) or `-`: the fast path for commands that pass lines through."""
    fh, name = _open_binary(src)
    try:
        yield from iter_raw_fh(fh, name)
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def is_live_input(src: str) -> bool:
    """True when `src` is stdin and stdin is a pipe or terminal (not a regular file): output should be flushed per
    record so the next stage sees it before this one's input ends."""
    if src != STDIN:
        return False
    try:
        return not stat.S_ISREG(os.fstat(sys.stdin.fileno()).st_mode)
    except (OSError, ValueError):
        return True


def parse_raw(name: str, n: int, raw: bytes) -> Located:
    """Parse a raw line as returned by `iter_raw` (newline included or not)."""
    has_nl = raw.endswith(b"\n")
    return parse_line(name, n, raw.rstrip(b"\r\n") if has_nl else raw, has_nl)


def parse_line(name: str, n: int, line: bytes, has_nl: bool = True) -> Located:
    """Parse one raw JSONL line into a Located object, or raise a one-line InputError."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as ue:
            raise InputError(name, n, None, f"invalid UTF-8 at byte {ue.start}") from None
        if not has_nl:
            raise InputError(name, n, None, "truncated last line (no newline, not valid JSON)") from None
        reason = str(e).split(":")[0]
        raise InputError(name, n, None, f"not valid JSON: {reason}") from None
    if not isinstance(obj, dict):
        kind = "array" if isinstance(obj, list) else type(obj).__name__
        raise InputError(name, n, None, f"expected a JSON object, got {kind}")
    return Located(name, n, obj)


def read_records(src: str = STDIN) -> Iterator[Located]:
    """Read JSON objects from a JSONL path (optionally .gz) or `-` for stdin, each with its source and line."""
    for name, n, line, has_nl in iter_lines(src):
        yield parse_line(name, n, line, has_nl)


def read_many(sources: Iterable[str]) -> Iterator[Located]:
    """Chain several inputs; with none given, read stdin."""
    srcs = list(sources) or [STDIN]
    for src in srcs:
        yield from read_records(src)


def dumps(obj: Any) -> bytes:
    """One record as a complete JSONL line (bytes, newline included)."""
    return orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY)


def existing_ids(path: str | os.PathLike[str], key: str = "id") -> set[str]:
    """IDs already present in a JSONL output file, for `--resume`; a trailing partial line is ignored."""
    ids: set[str] = set()
    p = Path(path)
    if not p.exists():
        return ids
    with open(p, "rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                break
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get(key), str):
                ids.add(obj[key])
    return ids


class RecordWriter:
    """Write records as whole lines to stdout, to `PATH` atomically (temp + rename), or appending for resume.

    Use as a context manager: on a clean exit the temp file replaces PATH; on an exception it is removed and an
    existing PATH is left untouched. In `append` mode a trailing partial line is cut off first, then each
    record is appended and flushed, so an interrupted run keeps every finished record.
    """

    def __init__(self, path: str | None = None, *, append: bool = False, flush_each: bool = False):
        self.path = None if path in (None, STDIN) else Path(path)  # type: ignore[arg-type]
        self.append = append
        self.flush_each = flush_each or append
        self.count = 0
        self._fh: IO[bytes] | None = None
        self._tmp: Path | None = None

    def __enter__(self) -> RecordWriter:
        if self.path is None:
            self._fh = sys.stdout.buffer
        elif self.append:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _truncate_partial_line(self.path)
            self._fh = open(self.path, "ab")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            self._fh = open(self._tmp, "wb")
        return self

    def write(self, obj: Any) -> None:
        self.write_line(dumps(obj))

    def write_line(self, line: bytes) -> None:
        """Write an already-serialised record line (must end with a newline)."""
        assert self._fh is not None
        self._fh.write(line)
        self.count += 1
        if self.flush_each:
            self._fh.flush()

    def write_all(self, records: Iterable[Any]) -> int:
        for r in records:
            self.write(r)
        return self.count

    def __exit__(self, exc_type, exc, tb) -> None:
        fh, self._fh = self._fh, None
        if fh is None:
            return
        if self.path is None:
            if exc_type is None:
                fh.flush()
            return
        fh.close()
        if self._tmp is not None:
            if exc_type is None:
                os.replace(self._tmp, self.path)
            else:
                self._tmp.unlink(missing_ok=True)


def _truncate_partial_line(path: Path) -> None:
    """Cut a trailing line that lacks its newline (a record torn by a crash) so appends stay whole."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as fh:
        fh.seek(0, io.SEEK_END)
        size = fh.tell()
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        pos = size
        chunk = 1 << 16
        while pos > 0:
            start = max(0, pos - chunk)
            fh.seek(start)
            data = fh.read(pos - start)
            idx = data.rfind(b"\n")
            if idx >= 0:
                fh.truncate(start + idx + 1)
                return
            pos = start
        fh.truncate(0)
