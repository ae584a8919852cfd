"""`swerl dapo`: one DAPO update on graded trajectory groups; writes the next checkpoint and a summary record."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from swerl_cli.cli._common import (
    CONFIG,
    INPUTS,
    OVERWRITE,
    TENSORBOARD,
    WANDB,
    boundary,
    check_training_paths,
    err_console,
    training_records,
)
from swerl_cli.cli._flags import Flags, config_options
from swerl_cli.cli._summary import show_summary
from swerl_cli.training.dapo_config import DapoConfig
from swerl_cli.training.follow import FollowOptions

HELP = (
    "One DAPO update (paper Eq. 2-4, 8) on graded trajectory groups: step-penalised rewards, group advantages, "
    "zero-advantage samples dropped, clipped token-level loss; writes checkpoint k+1 and one summary record on stdout "
    "(a table of it when stdout is a terminal; a closed stdout is refused before training)."
)


def _opt(help: str, *names: str) -> typer.models.OptionInfo:
    return typer.Option(*names, help=help)


def register(app: typer.Typer) -> None:
    app.command("dapo", help=HELP, short_help="One DAPO update on graded trajectory groups; writes checkpoint k+1.")(
        _dapo
    )


@boundary("dapo")
@config_options(DapoConfig)
@config_options(FollowOptions, marker="follow_options", defaults=True)
def _dapo(
    inputs: INPUTS = None,
    config: CONFIG = None,
    flags: Flags | None = None,
    tensorboard: TENSORBOARD = None,
    wandb: WANDB = False,
    overwrite: OVERWRITE = False,
    follow: Annotated[
        bool,
        _opt(
            "Asynchronous trainer: read graded records as a stream (a growing file, a directory of them, or - "
            "until EOF), one update per batch of complete groups; --output is then the run directory (iter-n/, "
            "follow_state.json).",
            "--follow",
        ),
    ] = False,
    follow_options: Flags | None = None,
) -> None:
    from swerl_cli.core.config import resolve_config
    from swerl_cli.core.errors import UsageError
    from swerl_cli.streams.outputs import open_output, require_writable_stdout
    from swerl_cli.streams.stdio import engine_output_to_stderr
    from swerl_cli.training import dist
    from swerl_cli.training.dapo import run_dapo
    from swerl_cli.training.publish import full_disk_cleanup
    from swerl_cli.training.trackers import TrackerSpec

    cfg = resolve_config(DapoConfig, config, **(flags or {}))
    if not cfg.model or not cfg.output:
        raise UsageError("--model CKPT_k and --output CKPT_k+1 are both required (the checkpoint to update, and where)")
    if dist.is_main():  # the summary records go to stdout: a closed one is refused before any training (exit 2)
        require_writable_stdout()
    if Path(cfg.output).resolve() != Path(cfg.model).resolve() and not follow:  # output == model: run_dapo says so
        check_training_paths(cfg.model, cfg.output, cfg.metrics, inputs, overwrite=overwrite)
    if follow:
        _check_follow_flags(follow_options or {})
        opts = FollowOptions(cfg.model, cfg.output, **(follow_options or {}))
        _follow(inputs or ["-"], cfg, opts)
        return
    # DeepSpeed's op builds, compilers and torch's workers print to descriptor 1: it points at stderr for the whole
    # run, and the summary record goes to the real stdout through a private descriptor.
    with engine_output_to_stderr(), full_disk_cleanup(Path(cfg.output)):
        summary = run_dapo(training_records(inputs), cfg, err_console.print, TrackerSpec(tensorboard, wandb))
        if summary is not None:  # ranks other than 0 return None
            with open_output(None) as out:
                show_summary(summary, "swerl dapo", out.write)


def _check_follow_flags(flags: Flags) -> None:
    """--follow's counts and times are in range (exit 2): a negative --idle-timeout would never end the wait."""
    from swerl_cli.core.errors import UsageError

    least = {"idle_timeout_s": ("--idle-timeout", 0), "max_updates": ("--max-updates", 1)}
    least |= {"groups_per_update": ("--groups-per-update", 1), "max_staleness": ("--max-staleness", 0)}
    for name, (flag, low) in least.items():
        value = flags.get(name)
        if value is not None and value < low:
            raise UsageError(f"{flag}: must be >= {low}; got {value}")
    decay = flags.get("stale_decay")
    if decay is not None and not 0 < decay <= 1:
        raise UsageError(f"--stale-decay: a weight 0 < D <= 1; got {decay}")


def _follow(inputs: list[str], cfg: DapoConfig, opts: FollowOptions) -> None:
    """`--follow`: one input stream; each committed update's summary record on stdout as it lands."""
    from swerl_cli.core.errors import UsageError
    from swerl_cli.streams.outputs import open_output
    from swerl_cli.streams.stdio import engine_output_to_stderr
    from swerl_cli.training.follow import check_run_dir, run_follow

    if len(inputs) != 1:
        raise UsageError(
            f"--follow reads one stream (a file the grader appends to, a directory of such files, or -), got "
            f"{len(inputs)} inputs"
        )
    check_run_dir(opts)
    with engine_output_to_stderr(), open_output(None, flush_each=True) as out:  # a summary per update, as it lands
        for summary in run_follow(inputs[0], cfg, opts, err_console.print):
            show_summary(summary, "swerl dapo", out.write)
