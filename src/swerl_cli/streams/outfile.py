"""The file an output writes, at the descriptor level: a torn last line cut, the ids of its whole lines read,
leftovers removed."""

from __future__ import annotations

import os

import orjson


def trim_torn_line(fd: int) -> int:
    """Cut a trailing line that lacks its newline (a record torn by a kill or a full disk); returns bytes cut."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return 0
    pos, chunk = size, 1 << 16
    while pos > 0:
        start = max(0, pos - chunk)
        idx = os.pread(fd, pos - start, start).rfind(b"\n")
        if idx >= 0:
            os.ftruncate(fd, start + idx + 1)
            return size - (start + idx + 1)
        pos = start
    os.ftruncate(fd, 0)
    return size


def existing_ids(fd: int, key: str) -> set[str]:
    """Ids of the whole lines of an open output (a line that is not a JSON object is skipped here; readers of
    the records themselves report it)."""
    ids: set[str] = set()
    with os.fdopen(os.dup(fd), "rb") as fh:
        fh.seek(0)
        for raw in fh:
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get(key), str):
                ids.add(obj[key])
    return ids


def unlink_quietly(path: str) -> None:
    """Remove `path`; a file already gone (or not removable) is left to the caller's next step."""
    try:
        os.unlink(path)
    except OSError:
        pass


def unlink_if_empty(path: str) -> None:
    """Remove `path` when it is an empty regular file (an append run that wrote nothing)."""
    try:
        if os.path.isfile(path) and os.path.getsize(path) == 0:
            os.unlink(path)
    except OSError:
        pass


def exclusive_temp(path: str) -> tuple[str, int]:
    """A new temporary file beside `path` (`.NAME.PID.RANDOM.tmp`), created exclusively: O_EXCL never follows a
    symlink someone planted at the name, so the data cannot be redirected and the later rename cannot put a link in
    place of `path`. Returns (its path, a write fd)."""
    import secrets

    parent, base = os.path.split(path)
    for _ in range(100):
        tmp = os.path.join(parent, f".{base}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(f"{parent}: no free temporary name beside {base}")
