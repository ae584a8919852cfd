"""JSONL record streams: located reading (path, `-`, `.gz`) and whole-line serialisation (writing: outputs.py).

`read_records` and `read_rows` are the one place a path's suffix picks its reader (`documents.file_kind`): JSON
Lines here, one JSON document or a parquet table in documents.py."""

from __future__ import annotations

import gzip
import os
import stat
import sys
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from swerl_cli.core.errors import InputError
from swerl_cli.streams.documents import file_kind, read_document, read_table
from swerl_cli.streams.records import Located

STDIN = "-"
# The longest line a reader accepts (newline included), so a line without end (`swerl filter /dev/zero`, a binary
# file) is one error line instead of filling memory; a trajectory of a 131k-token, 80-turn episode is a few MB.
MAX_LINE_BYTES = 256 << 20
MAX_LINE_ENV = "SWERL_MAX_LINE_BYTES"
# Lenient readers (`lenient_records`) give up on a file after this many bad lines with no good one before them.
PROBE_LINES = 5


def bounded_lines(fh: IO[bytes]) -> Iterator[bytes]:
    """The lines of `fh` as `for raw in fh` gives them, each at most MAX_LINE_BYTES (or $SWERL_MAX_LINE_BYTES);
    a longer one raises OSError naming the limit (the readers turn it into the line's InputError)."""
    limit = int(os.environ.get(MAX_LINE_ENV) or MAX_LINE_BYTES)
    while raw := fh.readline(limit + 1):
        if len(raw) > limit:
            raise OSError(f"line longer than {limit} bytes (the limit; {MAX_LINE_ENV} raises it)")
        yield raw


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
            for raw in bounded_lines(fh):
                n += 1
                has_nl = raw.endswith(b"\n")
                line = raw.rstrip(b"\r\n") if has_nl else raw
                if line and not line.isspace():
                    yield name, n, line, has_nl
        except (OSError, EOFError, zlib.error) as e:  # a corrupt or truncated .gz
            raise InputError(name, n + 1, None, f"cannot read: {e}") from None
    finally:
        if src != STDIN:
            fh.close()


def iter_raw_fh(fh: Iterable[bytes], name: str) -> Iterator[tuple[str, int, bytes]]:
    """Yield (source name, line number, raw line with its newline if any) for non-blank lines of a binary file."""
    n = 0
    lines = bounded_lines(fh) if hasattr(fh, "readline") else fh  # type: ignore[arg-type]
    try:
        for n, raw in enumerate(lines, 1):  # n is used after the loop for the error line
            if not raw.isspace():
                yield name, n, raw
    except (OSError, EOFError, zlib.error) as e:  # a corrupt or truncated .gz, or an unreadable device
        raise InputError(name, n + 1, None, f"cannot read: {e}") from None


def iter_raw(src: str) -> Iterator[tuple[str, int, bytes]]:
    """Raw lines of a path (`.gz` decompressed) or `-`: the fast path for commands that pass lines through."""
    fh, name = _open_binary(src)
    try:
        yield from iter_raw_fh(fh, name)
    finally:
        if src != STDIN:
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
    """Read JSON objects from a JSONL path (optionally .gz) or `-` for stdin, each with its source and line.

    A `.json` or `.traj` path holds one JSON document, pretty-printed or not (documents.read_document); a
    `.parquet` path is read as JSON Lines here (and refused as such): tables are dataset rows (`read_rows`)."""
    yield from _read(src, tables=False)


def read_rows(src: str) -> Iterator[Located]:
    """Located rows of a dataset or predictions file: as `read_records`, and a `.parquet` path is a table."""
    yield from _read(src, tables=True)


def read_many_rows(paths: Iterable[str]) -> Iterator[Located]:
    """Rows of several files in order; no paths means stdin (JSONL)."""
    for path in list(paths) or [STDIN]:
        yield from read_rows(path)


def _read(src: str, *, tables: bool) -> Iterator[Located]:
    """The one suffix dispatcher: documents.file_kind says how `src` is read (`-` is always JSON Lines)."""
    kind = "lines" if src == STDIN else file_kind(src)
    if kind == "document":
        yield from read_document(src)
    elif kind == "table" and tables:
        yield from read_table(src)
    else:
        for name, n, line, has_nl in iter_lines(src):
            yield parse_line(name, n, line, has_nl)


def lenient_records(src: str) -> Iterator[Located | InputError]:
    """The records of a JSONL path or `-`, line by line, for commands that keep the good rows of a mostly-good file
    (`convert`): a bad line is yielded as its InputError and reading goes on. A file none of whose first
    PROBE_LINES lines (all of them, when it has fewer) is a JSON object is not JSON Lines at all (a binary file, a
    parquet): one InputError is raised for the whole file instead of one per line."""
    held: list[InputError] = []  # the bad lines before the first good one
    good = False
    for name, n, line, has_nl in iter_lines(src):
        try:
            loc = parse_line(name, n, line, has_nl)
        except InputError as e:
            if good:
                yield e
                continue
            held.append(e)
            if len(held) >= PROBE_LINES:
                raise not_json_lines(held) from None
            continue
        if not good:
            good = True
            yield from held
        yield loc
    if held and not good:
        raise not_json_lines(held)


def not_json_lines(bad: list[InputError]) -> InputError:
    """The one error for a file whose first lines are all unusable: the first line's own error when it is the only
    line, else a line that says what was expected."""
    first = bad[0]
    if len(bad) == 1:
        return first
    return InputError(
        first.source,
        first.line,
        None,
        f"not a JSON Lines file: none of its first {len(bad)} lines is a JSON object (this one: {first.message}); "
        "expected one JSON object per line",
    )


def read_many(sources: Iterable[str]) -> Iterator[Located]:
    """Chain several inputs; with none given, read stdin."""
    srcs = list(sources) or [STDIN]
    for src in srcs:
        yield from read_records(src)


def dumps(obj: Any) -> bytes:
    """One record as a complete JSONL line (bytes, newline included)."""
    return orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY)
