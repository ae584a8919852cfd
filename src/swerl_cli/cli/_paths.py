"""Path flags checked before any work: an empty path, an output that cannot be written at the end of a long run,
the training commands' --model / --output / --metrics; and the flag name of a command's parameter."""

from __future__ import annotations

import inspect
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swerl_cli.core.errors import UsageError

if TYPE_CHECKING:
    from swerl_cli.streams.records import Located


# Parameters that name a file or directory: an empty value names none (`-o ''`, `-o "$UNSET"`)
_PATH_PARAMS = frozenset({"output", "report", "metrics", "plot", "tensorboard", "config", "tasks"})


def check_path_flags(params: dict[str, Any], fn: Callable[..., Any] | None = None) -> None:
    """A path flag given as '' is a usage error (exit 2) that says so, not `<stdout>: cannot write`."""
    for name, value in params.items():
        if name in _PATH_PARAMS and isinstance(value, str) and not value.strip():
            flag = flag_name(fn, name) if fn is not None else f"--{name.replace('_', '-')}"
            hint = "; leave the flag out to write to stdout" if name == "output" else ""
            raise UsageError(f"{flag}: the path is empty ({value!r}): give a file name{hint}")


def check_output_target(flag: str, path: str) -> None:
    """Before a long run, what would make the write of `path` fail at its end: a directory, or a parent that is a
    file (exit 2). The output contract (streams/outputs.py) still decides everything else when the file is written."""
    p = Path(path)
    if path.endswith(os.sep) or p.is_dir():
        raise UsageError(f"{flag} {path}: is a directory; give a file name")
    _check_parents(flag, path)


def _check_parents(flag: str, path: str) -> None:
    """The nearest existing parent of `path` is a directory (else exit 2 naming it)."""
    for parent in Path(path).parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{flag} {path}: {parent} is not a directory")
            break


def make_output_dir(flag: str, path: str) -> Path:
    """Create the output directory `path` (parents too) before any work: a file, FIFO or device there, or a parent
    that is a file, is a usage error (exit 2); a directory that cannot be made (permission, full disk) exit 1."""
    from swerl_cli.core.errors import OutputError

    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{flag} {path}: is {_kind(p)}, not a directory; give a directory for the outputs")
    _check_parents(flag, path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{flag} {path}: cannot create the directory: {e.strerror or e}") from None
    return p


def _kind(p: Path) -> str:
    """What `p` is, for a message: `a FIFO`, `a character device`, `a file`..."""
    mode = p.stat().st_mode
    kinds = [(stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")]
    kinds += [(stat.S_ISSOCK, "a socket"), (stat.S_ISREG, "a file")]
    return next((what for test, what in kinds if test(mode)), "a special file")


def flag_name(fn: Callable[..., Any], param: str) -> str:
    """The long flag of `fn`'s parameter `param` as its option declares it (`idle_timeout_s` is `--idle-timeout`)."""
    annotation = inspect.signature(fn, eval_str=True).parameters[param].annotation
    for info in getattr(annotation, "__metadata__", ()):
        # an Option in Annotated keeps its first name in `default` (typer moves it to the names when it builds)
        names = [info.default, *(getattr(info, "param_decls", None) or ())]
        for name in names:
            if isinstance(name, str) and name.startswith("--"):
                return name.split("/")[0]
    return f"--{param.replace('_', '-')}"


def check_training_paths(
    model: str, output: str, metrics: str | None, inputs: list[str] | None, *, overwrite: bool
) -> None:
    """rft and dapo, before any work: a local --model is a usable model directory (model_dir.py, collect's rule);
    --output is absent, empty or a swerl checkpoint (`check_checkpoint_dir`); --metrics names a file (`DIR/` wrote
    a file DIR, an existing DIR failed after training) and is not an input."""
    from swerl_cli.core.model_dir import check_model_dir
    from swerl_cli.streams.outputs import refuse_own_input

    check_checkpoint_dir(output, overwrite=overwrite)
    if metrics:
        check_output_target("--metrics", metrics)
        refuse_own_input("--metrics", metrics, inputs or [])
    check_model_dir(model)


def training_records(inputs: list[str] | None) -> Iterator[Located]:
    """rft and dapo: the records of `inputs` (stdin with none); under a multi-process launcher every rank reads
    the data, so stdin is refused there."""
    from swerl_cli.core.errors import ConfigError
    from swerl_cli.streams.jsonl import read_many
    from swerl_cli.training import dist

    if dist.world_size() > 1 and (not inputs or "-" in inputs):
        raise ConfigError("under a multi-process launcher every rank reads the data: pass input files, not stdin")
    return read_many(inputs or [])


def check_checkpoint_dir(path: str, *, overwrite: bool) -> None:
    """A training `--output` may be absent, empty or a swerl checkpoint (replaced when the run ends); anything else
    is refused unless --overwrite, so a typo cannot delete an unrelated directory."""
    p = Path(path)
    if overwrite or not p.exists():
        return
    if not p.is_dir():
        raise UsageError(f"--output {path} is a file, not a checkpoint directory; choose another path or --overwrite")
    if any(p.iterdir()) and not (p / "swerl_run_config.json").is_file():
        raise UsageError(
            f"--output {path} is a non-empty directory that is not a swerl checkpoint (no swerl_run_config.json); "
            "it would be deleted: choose another path or pass --overwrite"
        )
