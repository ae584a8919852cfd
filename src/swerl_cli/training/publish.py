"""A checkpoint directory is complete or absent: each training run writes OUTPUT.partial beside the target and
renames it into place at the end (rft and dapo).

    partial = start_partial(out, keep=resume)   # OUTPUT.partial, emptied unless a resumed run continues it
    ...                                         # weights, tokenizer, run config, metrics.jsonl written there
    publish(partial, out)                       # the old OUTPUT moved aside, the new one renamed in, the old removed

An interrupted run leaves OUTPUT as it was (old weights with their own metrics) and OUTPUT.partial beside it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from swerl_cli.core.errors import OutputError


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


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
