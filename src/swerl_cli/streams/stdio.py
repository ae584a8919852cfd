"""stdout carries records only, even while an inference engine runs in-process.

vLLM's engine core and worker processes (and some libraries) write log lines to file descriptor 1, which is where
`swerl collect | swerl grade` sends records. Redirecting Python's `sys.stdout` cannot stop that: the children
inherit the descriptor itself. So, for the duration of `engine_output_to_stderr()`:

- the real stdout is moved to a private descriptor (not inheritable, so no child process holds the pipe open), and
  the record writer (`outputs.open_output(None)`, `-o -`, `-o /dev/stdout`) writes there;
- descriptor 1 is pointed at stderr, so whatever the process, its libraries or any child started meanwhile prints
  to "stdout" lands on stderr with the rest of the logs.

When stdout is not a real descriptor (an in-process test runner's capture) nothing is changed.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import IO

_PRIVATE: IO[bytes] | None = None  # the real stdout while descriptor 1 points at stderr


def records_stream() -> IO[bytes]:
    """The binary stream records go to when the output is stdout."""
    return _PRIVATE if _PRIVATE is not None else sys.stdout.buffer


def records_fd(fd: int) -> int:
    """The descriptor to write for `/dev/stdout`-like outputs naming `fd` (1 means the real stdout)."""
    return _PRIVATE.fileno() if fd == 1 and _PRIVATE is not None else fd


def _real_stdout() -> bool:
    try:
        return sys.stdout is not None and sys.stdout.fileno() == 1 and sys.stderr.fileno() == 2
    except (AttributeError, OSError, ValueError):
        return False


@contextlib.contextmanager
def engine_output_to_stderr() -> Iterator[None]:
    """Point descriptor 1 at stderr and keep the real stdout for records only (see the module docstring)."""
    global _PRIVATE
    if _PRIVATE is not None or not _real_stdout():
        yield
        return
    sys.stdout.flush()
    private = os.dup(1)  # os.dup makes a non-inheritable descriptor: spawned children never get it
    os.dup2(2, 1)
    _PRIVATE = os.fdopen(private, "wb")
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        stream, _PRIVATE = _PRIVATE, None
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
        with contextlib.suppress(OSError):
            os.dup2(stream.fileno(), 1)
        with contextlib.suppress(OSError, ValueError):
            stream.close()
