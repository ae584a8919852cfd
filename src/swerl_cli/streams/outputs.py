"""The output contract every command shares (docs/reliability.md).

    with open_output(path, "append", resume=resume, inputs=inputs) as out:   # collect, grade, validate, mine
        todo = [r for r in records if r.id not in out.done_ids]
        out.write(record)                                                  # one whole line, flushed

    with open_output(path, "replace", inputs=inputs) as out:               # filter, import, convert
        out.write(record)                                                  # file replaced when the block ends

- `path` None or "-" is stdout. `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` (or a symlink to one) write to that
  descriptor; one the caller closed (`>&-`) is refused, exit 2 (`require_writable_stdout`), never written to.
- A target that exists and is not a regular file (device, FIFO, socket) is written in place: never replaced,
  truncated or deleted.
- "append" (long runs) flushes every record, so an interrupt or kill keeps each finished one. A fresh run empties
  the file once its lock is held; `resume=True` keeps it, cuts a torn last line and fills `done_ids`.
- "replace" (short runs) writes `.NAME.PID.RANDOM.tmp` beside the target (created exclusively, never through a
  symlink planted at its name) and renames it over the target on success;
  on any failure or signal the temp file is removed and the old target is untouched.
- A regular-file target is locked (flock, exclusive) for the whole run: a second run on it is refused.
- An output that is also an input (the same inode: through a symlink or a hard link too) is refused before
  anything is touched, exit 2: `refuse_own_input`, which the commands' other output flags use as well.
- A symlink target is written through: the link stays, the file it points to is written (or replaced).
- Every OS error (full disk, read-only directory, missing permission) is one OutputError line, never a traceback.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Literal

from swerl_cli.core.errors import OutputError, UsageError
from swerl_cli.streams.guards import refuse_own_input as refuse_own_input  # re-exported: commands' other outputs
from swerl_cli.streams.guards import refuse_stdout_input
from swerl_cli.streams.guards import same_file as same_file
from swerl_cli.streams.jsonl import STDIN, dumps, read_records
from swerl_cli.streams.outfile import exclusive_temp, existing_ids, trim_torn_line, unlink_if_empty, unlink_quietly
from swerl_cli.streams.records import Located
from swerl_cli.streams.stdio import records_fd, records_stream

Mode = Literal["append", "replace"]
_FD_ALIAS = re.compile(r"^/(?:dev/fd|proc/self/fd)/(\d+)$")


_STD_NAMES = {0: "stdin", 1: "stdout", 2: "stderr"}
_CLOSED_STD: set[int] = set()  # standard descriptors the caller closed (`>&-`), held by /dev/null since


def mark_std_closed(fd: int) -> None:
    """Record that the caller closed standard descriptor `fd` (the CLI then holds it with /dev/null, so a write
    there would succeed and vanish): `require_writable_stdout` refuses it from then on."""
    _CLOSED_STD.add(fd)


def require_writable_stdout(what: str | None = None, fd: int = 1) -> None:
    """A UsageError (exit 2) when records would go to descriptor `fd` (stdout by default) and the caller closed it
    (`swerl rft ... >&-`, `-o /dev/stdout` with stdout closed): every record would be dropped while the run exits 0.
    Call it before any work; `what` prefixes the line (e.g. `-o /dev/stdout`)."""
    closed = fd in _CLOSED_STD or (fd == 1 and sys.stdout is None)
    if not closed:
        try:
            os.fstat(fd)
        except OSError:
            closed = True
    if closed:
        pre = f"{what}: " if what else ""
        if fd not in _STD_NAMES:
            raise UsageError(f"{pre}descriptor {fd} is not open: open it (e.g. {fd}>FILE) or write to a file with -o")
        raise UsageError(f"{pre}{_STD_NAMES[fd]} is closed: redirect it or write to a file with -o")


def _fd_alias(path: str) -> int | None:
    """The descriptor a path names (`/dev/stdout` -> 1, `/dev/fd/3` -> 3, `/proc/self/fd/N`, a symlink to any of
    them), or None."""
    named = {"/dev/stdout": 1, "/dev/stderr": 2}
    own = f"/proc/{os.getpid()}/fd/"
    for _ in range(40):  # the kernel's own limit on a chain of symlinks
        if path in named:
            return named[path]
        m = _FD_ALIAS.match(path)
        if m or (path.startswith(own) and path[len(own) :].isdigit()):
            return int(m.group(1) if m else path[len(own) :])
        try:
            link = os.readlink(path)
        except OSError:
            return None
        path = os.path.normpath(os.path.join(os.path.dirname(path), link))
    return None


def _why(e: OSError) -> str:
    return e.strerror or type(e).__name__


class Output:
    """An open output (see the module docstring); build it with `open_output`."""

    def __init__(self, path: str | None, mode: Mode = "replace", *, resume: bool = False,
                 inputs: Iterable[str] = (), flush_each: bool = False, id_key: str = "id"):  # fmt: skip
        if mode not in ("append", "replace"):
            raise ValueError(f"mode must be 'append' or 'replace', got {mode!r}")
        self.path = None if path in (None, STDIN) else str(path)
        self.mode, self.resume, self.id_key = mode, resume, id_key
        self.flush_each = flush_each or mode == "append"
        self.name = self.path or "<stdout>"
        self.count = 0
        self.done_ids: set[str] = set()
        self._fh: IO[bytes] | None = None
        self._lock_fd: int | None = None
        self._tmp: str | None = None
        self._created = False  # the lock created an empty target: removed again if the run fails
        if resume and self.path is None:
            raise UsageError("--resume needs -o FILE (the records already written are read from it)")
        if self.path is not None:
            refuse_own_input("-o", self.path, inputs)
            fd = _fd_alias(self.path)
            if fd is not None:
                require_writable_stdout(f"-o {self.path}", fd)
        else:
            refuse_stdout_input(inputs)

    # -- opening ------------------------------------------------------------------------------------------------
    def __enter__(self) -> Output:
        try:
            self._open()
        except OSError as e:
            self._cleanup(ok=False)
            raise OutputError(f"{self.name}: cannot write: {_why(e)}") from None
        except BaseException:
            self._cleanup(ok=False)
            raise
        return self

    def _open(self) -> None:
        if self.path is None:
            self._fh = records_stream()
            return
        fd = _fd_alias(self.path)
        if fd is not None:
            self._special(f"{self.path} (a descriptor)")
            self._fh = os.fdopen(os.dup(records_fd(fd)), "wb")
            return
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            if stat.S_ISDIR(st.st_mode):
                raise OutputError(f"{self.path}: is a directory, expected a file")
            self._special(f"{self.path} (not a regular file)")
            self._fh = open(self.path, "wb", buffering=0 if stat.S_ISCHR(st.st_mode) else -1)
            return
        if os.path.islink(self.path):
            self.path = os.path.realpath(self.path)  # replace the link's target, not the link
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock()
        if self.mode == "append":
            assert self._lock_fd is not None
            if self.resume:
                trim_torn_line(self._lock_fd)
                self.done_ids = existing_ids(self._lock_fd, self.id_key)
                self._fh = os.fdopen(os.dup(self._lock_fd), "ab")
            # A fresh run empties the file at its first record (or clean end), so a bad input loses nothing.
        else:
            self._tmp, tfd = exclusive_temp(self.path)
            self._fh = os.fdopen(tfd, "wb")

    def _special(self, what: str) -> None:
        if self.resume:
            raise UsageError(f"--resume needs a regular file; {what} cannot be resumed")

    def _lock(self) -> None:
        """Open (creating if needed) and flock the target; retry if another run renamed a new file over it."""
        assert self.path is not None
        for _ in range(10):
            existed = os.path.exists(self.path)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise OutputError(
                    f"{self.path}: another swerl run is writing this file (it is locked); wait for it or use another -o"
                ) from None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                self._lock_fd, self._created = fd, not existed
                return
            os.close(fd)  # replaced between open and flock: lock the new file instead
        raise OutputError(f"{self.path}: keeps being replaced by another process")

    # -- writing ------------------------------------------------------------------------------------------------
    def write(self, obj: Any) -> None:
        """Write one record as a whole line."""
        self.write_line(dumps(obj))

    def write_line(self, line: bytes) -> None:
        """Write an already-serialised record line (must end with a newline)."""
        try:
            if self._fh is None:
                self._begin()
            assert self._fh is not None  # _begin opened it
            self._fh.write(line)
            if self.flush_each:
                self._fh.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputError(f"{self.name}: cannot write: {_why(e)}") from None
        self.count += 1

    def _begin(self) -> None:
        """A fresh append run: empty the locked file now that there is something to write."""
        assert self._lock_fd is not None, "use the Output as a context manager"
        os.ftruncate(self._lock_fd, 0)
        os.lseek(self._lock_fd, 0, os.SEEK_SET)
        self._fh = os.fdopen(os.dup(self._lock_fd), "wb")

    def write_bytes(self, data: bytes) -> None:
        """Write a whole document (an HTML page) instead of records."""
        self.write_line(data)

    def write_all(self, records: Iterable[Any]) -> int:
        """Write every record; returns the running count."""
        for r in records:
            self.write(r)
        return self.count

    def previous(self) -> Iterator[Located]:
        """With `resume`: the records already in the output (torn line already cut), each located."""
        if self.resume and self.path is not None and os.path.exists(self.path):
            yield from read_records(self.path)

    # -- closing ------------------------------------------------------------------------------------------------
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._cleanup(ok=exc_type is None)

    def _cleanup(self, *, ok: bool) -> None:
        error: OSError | None = None
        try:
            if ok and self._fh is None and self._lock_fd is not None:
                self._begin()  # a fresh append run that wrote nothing: the output is empty
        except OSError as e:
            error, ok = e, False
        fh, self._fh = self._fh, None
        try:
            if fh is not None:
                if self.path is None:  # stdout
                    if ok:
                        fh.flush()
                else:
                    if ok and self._tmp is not None:
                        fh.flush()
                        os.fsync(fh.fileno())
                    fh.close()
            if self._tmp is not None:
                if ok:
                    os.replace(self._tmp, self.path)  # type: ignore[arg-type]
                    self._tmp = None
                    self._created = False
        except BrokenPipeError:
            if ok:
                raise
        except OSError as e:
            error, ok = e, False
        finally:
            if self._tmp is not None:
                unlink_quietly(self._tmp)
                self._tmp = None
            if not ok and self._created and self.path is not None and (self.mode == "replace" or self.count == 0):
                unlink_if_empty(self.path)
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None
        if error is not None:
            raise OutputError(f"{self.name}: cannot write: {_why(error)}") from None


def open_output(path: str | None, mode: Mode = "replace", *, resume: bool = False, inputs: Iterable[str] = (),
                flush_each: bool = False, id_key: str = "id") -> Output:  # fmt: skip
    """An Output for `-o PATH` (None or '-' = stdout); use it as a context manager."""
    return Output(path, mode, resume=resume, inputs=inputs, flush_each=flush_each, id_key=id_key)
