"""`swerl rft`: rejection fine-tuning on the action tokens of selected trajectories; writes a checkpoint."""

from __future__ import annotations

from pathlib import Path

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
from swerl_cli.training.rft_config import RftConfig

HELP = (
    "Rejection fine-tuning (paper §4.2): next-token loss on exactly the tokens the policy sampled in the input "
    "trajectories (format-error turns masked), packed without padding, DeepSpeed ZeRO-2/3. Writes a save_pretrained "
    "checkpoint with tokenizer and swerl_run_config.json to --output, metrics.jsonl beside it, and one swerl.summary/1 "
    "record on stdout (a table of it when stdout is a terminal; a closed stdout is refused before training). Runs "
    "as one process; launch under torchrun or deepspeed for many GPUs (docs/training.md)."
)


def register(app: typer.Typer) -> None:
    app.command("rft", help=HELP)(_rft)


@boundary("rft")
@config_options(RftConfig, exclude=("grad_clip",))
def _rft(
    inputs: INPUTS = None,
    config: CONFIG = None,
    flags: Flags | None = None,
    tensorboard: TENSORBOARD = None,
    wandb: WANDB = False,
    overwrite: OVERWRITE = False,
) -> None:
    from swerl_cli.core.config import resolve_config
    from swerl_cli.streams.outputs import open_output, require_writable_stdout
    from swerl_cli.streams.stdio import engine_output_to_stderr
    from swerl_cli.training import dist
    from swerl_cli.training.publish import full_disk_cleanup
    from swerl_cli.training.rft import run_rft
    from swerl_cli.training.trackers import TrackerSpec

    cfg = resolve_config(RftConfig, config, **(flags or {}))
    if dist.is_main():  # the summary record goes to stdout: a closed one is refused before any training (exit 2)
        require_writable_stdout()
    check_training_paths(cfg.model, cfg.output, cfg.metrics, inputs, overwrite=overwrite)
    records = training_records(inputs)

    def progress(m: dict, total: int) -> None:
        err_console.print(
            f"rft step {m['step']}/{total}  loss {m['loss']:.4f}  lr {m['lr']:.2e}  grad {m['grad_norm']:.3f}  "
            f"{m['tokens_per_s']:.0f} tok/s  masked {m['masked_share']:.0%}"
        )

    # DeepSpeed's op builds, compilers and torch's workers print to descriptor 1: it points at stderr for the whole
    # run, and the summary record goes to the real stdout through a private descriptor.
    with engine_output_to_stderr(), full_disk_cleanup(Path(cfg.output)):
        summary = run_rft(records, cfg, on_step=progress, trackers=TrackerSpec(tensorboard, wandb))
        if dist.is_main():
            with open_output(None) as out:
                show_summary(summary, "swerl rft", out.write, _rows(summary))


def _rows(summary: dict) -> dict[str, str]:
    """What stderr shows of the run: one line, or a small table on a terminal (cli/_summary.py)."""
    d, loss = summary["data"], summary["final_loss"]
    return {
        "steps": str(summary["steps"]),
        "sequences": f"{d['samples']} ({d['skipped']} skipped, {d['truncated']} truncated, "
        f"{d['dropped_too_long']} dropped)",
        "tokens": f"{d['tokens']} ({d['trainable_tokens']} trained)",
        "final loss": "-" if loss is None else f"{loss:.4f}",
        "checkpoint": str(summary["checkpoint"]),
        "metrics": str(summary["metrics_file"]),
    }
