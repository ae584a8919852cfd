"""`swerl rft`: rejection fine-tuning on the action tokens of selected trajectories; writes a checkpoint."""

from __future__ import annotations

from typing import Annotated

import typer

from swerl_cli.cli._common import (
    ATTN_IMPLEMENTATION,
    CONFIG,
    DTYPE,
    GRADIENT_CHECKPOINTING,
    INPUTS,
    OFFLOAD,
    OVERWRITE,
    SEQUENCE_PARALLEL,
    TENSORBOARD,
    WANDB,
    boundary,
    check_training_paths,
    err_console,
)

HELP = (
    "Rejection fine-tuning (paper §4.2): next-token loss on exactly the tokens the policy sampled in the input "
    "trajectories (format-error turns masked), packed without padding, DeepSpeed ZeRO-2/3. Writes a save_pretrained "
    "checkpoint with tokenizer and swerl_run_config.json to --output, metrics.jsonl beside it, and one swerl.summary/1 "
    "record on stdout. Runs as one process; launch under torchrun or deepspeed for many GPUs (docs/training.md)."
)


def _opt(help: str, *names: str) -> typer.models.OptionInfo:
    return typer.Option(*names, help=help)


def register(app: typer.Typer) -> None:
    app.command("rft", help=HELP)(_rft)


@boundary("rft")
def _rft(
    inputs: INPUTS = None,
    model: Annotated[str | None, _opt("Base model: a save_pretrained directory or hub name.", "--model", "-m")] = None,
    output: Annotated[str | None, _opt("Checkpoint directory to write.", "--output", "-o")] = None,
    config: CONFIG = None,
    lr: Annotated[float | None, _opt("Peak learning rate (paper 5e-6).")] = None,
    weight_decay: Annotated[float | None, _opt("AdamW weight decay (paper 0.1).")] = None,
    warmup_steps: Annotated[int | None, _opt("Linear warmup steps before the cosine decay (paper 10).")] = None,
    lr_schedule: Annotated[str | None, _opt("cosine (to 0 at the last step) or constant.")] = None,
    epochs: Annotated[int | None, _opt("Passes over the data (paper 1).")] = None,
    batch_size: Annotated[int | None, _opt("Sequences per optimizer step, over all ranks (paper 64).")] = None,
    batch_tokens: Annotated[int | None, _opt("Tokens per optimizer step instead of --batch-size.")] = None,
    micro_batch_tokens: Annotated[int | None, _opt("Token budget of one packed forward/backward per rank.")] = None,
    max_seq_len: Annotated[int | None, _opt("Longest sequence in tokens (paper 65536).")] = None,
    too_long: Annotated[str | None, _opt("Longer sequences: error, truncate (masked tail) or drop.")] = None,
    skip_invalid: Annotated[bool | None, _opt("Skip (and count) unusable records instead of failing.")] = None,
    mask_format_errors: Annotated[
        bool | None, _opt("Mask assistant turns flagged format_error.", "--mask-format-errors/--train-format-errors")
    ] = None,
    rerender: Annotated[bool | None, _opt("Re-render with the chat template when token ids cannot be used.")] = None,
    skip_unrebuildable: Annotated[
        bool | None, _opt("Drop (and count) trajectories whose token ids cannot be rebuilt (prefix_ok false).")
    ] = None,
    max_steps: Annotated[int | None, _opt("Stop after this many optimizer steps.")] = None,
    seed: Annotated[int | None, _opt("Seed for the shuffle and the engine.")] = None,
    shuffle: Annotated[bool | None, _opt("Shuffle sequences (seeded) before cutting them into steps.")] = None,
    zero_stage: Annotated[int | None, _opt("DeepSpeed ZeRO stage (0-3; default 2).")] = None,
    offload: OFFLOAD = None,
    gradient_checkpointing: GRADIENT_CHECKPOINTING = None,
    dtype: DTYPE = None,
    attn_implementation: ATTN_IMPLEMENTATION = None,
    sequence_parallel: SEQUENCE_PARALLEL = None,
    save_every: Annotated[int | None, _opt("Resumable DeepSpeed checkpoint every N steps (0: none).")] = None,
    resume: Annotated[bool | None, _opt("Continue from the last checkpoint under OUTPUT/ds_checkpoints.")] = None,
    metrics: Annotated[str | None, _opt("Metrics JSONL path (default OUTPUT/metrics.jsonl).")] = None,
    report_to: Annotated[str | None, _opt("Also log to: none, tensorboard (beside metrics.jsonl) or wandb.")] = None,
    tensorboard: TENSORBOARD = None,
    wandb: WANDB = False,
    overwrite: OVERWRITE = False,
) -> None:
    from swerl_cli.core.config import resolve_config
    from swerl_cli.core.errors import ConfigError
    from swerl_cli.streams.jsonl import read_many
    from swerl_cli.streams.outputs import open_output
    from swerl_cli.training import dist
    from swerl_cli.training.rft import run_rft
    from swerl_cli.training.rft_config import RftConfig
    from swerl_cli.training.trackers import TrackerSpec
    from swerl_cli.training.train_config import field_names

    flags = {k: v for k, v in locals().items() if k in field_names(RftConfig)}
    cfg = resolve_config(RftConfig, config, **flags)
    check_training_paths(cfg.model, cfg.output, cfg.metrics, inputs, overwrite=overwrite)
    if dist.world_size() > 1 and (not inputs or "-" in inputs):
        raise ConfigError("under a multi-process launcher every rank reads the data: pass input files, not stdin")

    def progress(m: dict, total: int) -> None:
        err_console.print(
            f"rft step {m['step']}/{total}  loss {m['loss']:.4f}  lr {m['lr']:.2e}  grad {m['grad_norm']:.3f}  "
            f"{m['tokens_per_s']:.0f} tok/s  masked {m['masked_share']:.0%}"
        )

    summary = run_rft(read_many(inputs or []), cfg, on_step=progress, trackers=TrackerSpec(tensorboard, wandb))
    if dist.is_main():
        d = summary["data"]
        err_console.print(
            f"rft: {summary['steps']} steps, {d['samples']} sequences ({d['skipped']} skipped, {d['truncated']} "
            f"truncated, {d['dropped_too_long']} dropped), final loss {summary['final_loss']}; "
            f"checkpoint {summary['checkpoint']}"
        )
        with open_output(None) as out:
            out.write(summary)
