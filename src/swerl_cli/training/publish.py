"""A checkpoint directory is complete or absent: each training run writes OUTPUT.partial beside the target and
renames it into place at the end (rft and dapo).

    partial = start_partial(out, keep=resume)   # OUTPUT.partial, emptied unless a resumed run continues it
    ...                                         # weights, tokenizer, run config, metrics.jsonl written there
    publish(partial, out)                       # the old OUTPUT moved aside, the new one renamed in, the old removed

An interrupted run leaves OUTPUT as it was (old weights with their own metrics) and OUTPUT.partial beside it.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from swerl_cli.core.errors import OutputError, SwerlError


def partial_dir(out: Path) -> Path:
    """Where a run writes before its checkpoint is complete: OUTPUT.partial, in the same directory (same file
    system, so the final rename is atomic)."""
    return out.with_name(out.name + ".partial")


def start_partial(out: Path, *, keep: bool = False) -> Path:
    """Create OUTPUT.partial (emptied first unless `keep`); an unwritable place is one OutputError line."""
    partial = partial_dir(out)
    try:
        if partial.exists() and not keep:
            _remove(partial)
        partial.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"--output {out}: cannot write the checkpoint: {e.strerror or e}") from None
    return partial


def publish(partial: Path, out: Path) -> None:
    """Rename the finished `partial` to `out`; an `out` already there is moved aside first and removed after, so
    `out` is always either the old complete checkpoint or the new one (absent for the instant between renames)."""
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    try:
        moved = out.exists() or out.is_symlink()
        if moved:
            os.rename(out, old)
        os.rename(partial, out)
    except OSError as e:
        why = e.strerror or e
        raise OutputError(f"--output {out}: cannot move the finished checkpoint into place: {why}") from None
    if moved:
        _remove(old)


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _is_disk_full(err: BaseException) -> bool:
    """ENOSPC, a quota or a file size limit, raised as OSError or inside a library's own error (safetensors' Rust
    writer says `No space left on device (os error 28)`)."""
    if isinstance(err, OSError) and err.errno in _FULL:
        return True
    text = str(err)
    return any(os.strerror(code) in text or f"os error {code})" in text for code in _FULL)


@contextmanager
def full_disk_cleanup(out: Path) -> Iterator[None]:
    """A run that fills the disk while writing OUTPUT.partial (weights, optimizer state, metrics) removes it and ends
    with one OutputError line (exit 1), OUTPUT untouched, instead of a traceback and a half-written .partial that
    would fill the disk for the next run too."""
    try:
        yield
    except Exception as e:
        if not _is_disk_full(e):
            raise
        partial = partial_dir(out)
        _remove(partial)
        if isinstance(e, SwerlError):  # already its one line (`--metrics /dev/full: cannot write: ...`)
            raise
        why = next((os.strerror(c) for c in _FULL if os.strerror(c) in str(e) or f"os error {c})" in str(e)), str(e))
        raise OutputError(
            f"--output {out}: cannot write the checkpoint: {why}; {partial.name} removed, {out.name} unchanged"
        ) from None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
