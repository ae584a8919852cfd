"""`swerl dapo`: one DAPO update on graded trajectory groups; writes the next checkpoint and a summary record."""

from __future__ import annotations

from pathlib import Path
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
    "One DAPO update (paper Eq. 2-4, 8) on graded trajectory groups: step-penalised rewards, group advantages, "
    "zero-advantage samples dropped, clipped token-level loss; writes checkpoint k+1 and one summary record."
)


def _opt(help: str, *names: str) -> typer.models.OptionInfo:
    return typer.Option(*names, help=help)


def register(app: typer.Typer) -> None:
    app.command("dapo", help=HELP, short_help="One DAPO update on graded trajectory groups; writes checkpoint k+1.")(
        _dapo
    )


@boundary("dapo")
def _dapo(
    inputs: INPUTS = None,
    model: Annotated[str | None, _opt("Checkpoint k: the policy that sampled the rollouts.", "--model", "-m")] = None,
    output: Annotated[str | None, _opt("Directory for checkpoint k+1 (written atomically).", "--output", "-o")] = None,
    config: CONFIG = None,
    metrics: Annotated[str | None, _opt("Metrics JSONL path (default: OUTPUT/metrics.jsonl).")] = None,
    eps_low: Annotated[float | None, _opt("Lower clip bound eps_low (paper 0.2).")] = None,
    eps_high: Annotated[float | None, _opt("Upper clip bound eps_high (paper 0.3 stage 1, 0.26 stage 2).")] = None,
    group_size: Annotated[int | None, _opt("G, samples per task the run collected (>= 2; paper 10).")] = None,
    l_thr: Annotated[int | None, _opt("Turn count from which the step penalty applies (paper 10).")] = None,
    t_max: Annotated[int | None, _opt("The run's max turns (collect --max-turns; paper 40, then 80).")] = None,
    std: Annotated[str | None, _opt("Group std: population or sample.")] = None,
    adv_delta: Annotated[float | None, _opt("delta in (R - mean) / (std + delta).")] = None,
    old_logprobs: Annotated[str | None, _opt("pi_old logprobs: trainer (recomputed) or sampler (recorded).")] = None,
    token_norm: Annotated[str | None, _opt("Loss normaliser: action tokens of each step, or of the iteration.")] = None,
    loss: Annotated[
        str | None, _opt("Loss: dapo (the paper's), or an off-policy correction beside it: tis, mis, ipo.")
    ] = None,
    is_cap: Annotated[float | None, _opt("tis: cap of the weight pi_old/pi_infer; mis: mask above it (2.0).")] = None,
    is_floor: Annotated[float | None, _opt("mis: mask tokens whose weight pi_old/pi_infer is below it (0.5).")] = None,
    ipo_eps: Annotated[float | None, _opt("ipo: mask tokens with |pi_train - pi_infer| above this (0.3).")] = None,
    lr: Annotated[float | None, _opt("Learning rate (paper 1e-6, constant).")] = None,
    weight_decay: Annotated[float | None, _opt("AdamW weight decay (paper 0.1).")] = None,
    grad_clip: Annotated[float | None, _opt("Gradient-norm clip (paper 1.0; 0 disables).")] = None,
    batch_size: Annotated[int | None, _opt("Trajectories per optimizer step (paper 128, then 256).")] = None,
    micro_batch_tokens: Annotated[int | None, _opt("Token budget of one packed forward/backward.")] = None,
    max_seq_len: Annotated[int | None, _opt("Longest trajectory sequence accepted, in tokens.")] = None,
    zero_stage: Annotated[int | None, _opt("DeepSpeed ZeRO stage (0-3).")] = None,
    offload: OFFLOAD = None,
    gradient_checkpointing: GRADIENT_CHECKPOINTING = None,
    dtype: DTYPE = None,
    attn_implementation: ATTN_IMPLEMENTATION = None,
    sequence_parallel: SEQUENCE_PARALLEL = None,
    seed: Annotated[int | None, _opt("Seed for the step split and the engine.")] = None,
    carry_optimizer: Annotated[
        bool | None, _opt("Load/save AdamW state beside the checkpoints so it persists across iterations.")
    ] = None,
    allow_biased_sampling: Annotated[
        bool | None, _opt("Train on rollouts sampled with truncation or temperature != 1 (biased ratio).")
    ] = None,
    allow_mixed_versions: Annotated[
        bool | None, _opt("Train on rollouts of several policy versions (off-policy).")
    ] = None,
    tensorboard: TENSORBOARD = None,
    wandb: WANDB = False,
    overwrite: OVERWRITE = False,
    rerender: Annotated[bool | None, _opt("Re-render with the chat template when token ids cannot be used.")] = None,
    skip_unrebuildable: Annotated[
        bool | None, _opt("Drop (and count) trajectories whose token ids cannot be rebuilt (prefix_ok false).")
    ] = None,
    follow: Annotated[
        bool,
        _opt(
            "Asynchronous trainer: read graded records as a stream (a growing file, or - until EOF), one update per "
            "batch of complete groups; --output is then the run directory (iter-n/, follow_state.json).",
            "--follow",
        ),
    ] = False,
    max_staleness: Annotated[
        int, _opt("--follow: drop groups sampled more than K optimizer steps before the update (0: on-policy).")
    ] = 1,
    groups_per_update: Annotated[int, _opt("--follow: complete fresh groups per update.")] = 1,
    push: Annotated[
        str | None, _opt("--follow: vLLM server URL to reload each new checkpoint into (drained, probe-checked).")
    ] = None,
    max_updates: Annotated[int | None, _opt("--follow: stop after this many updates in the run.")] = None,
    idle_timeout: Annotated[
        float | None, _opt("--follow: a file input ends after this many seconds without a new line.")
    ] = None,
) -> None:
    from swerl_cli.core.config import resolve_config
    from swerl_cli.core.errors import ConfigError
    from swerl_cli.streams.jsonl import read_many
    from swerl_cli.streams.outputs import open_output
    from swerl_cli.training import dist
    from swerl_cli.training.dapo import run_dapo
    from swerl_cli.training.dapo_config import DapoConfig
    from swerl_cli.training.trackers import TrackerSpec
    from swerl_cli.training.train_config import field_names

    flags = {k: v for k, v in locals().items() if k in field_names(DapoConfig)}
    cfg = resolve_config(DapoConfig, config, **flags)
    if not cfg.model or not cfg.output:
        raise ConfigError("--model CKPT_k and --output CKPT_k+1 are both required")
    if Path(cfg.output).resolve() != Path(cfg.model).resolve() and not follow:  # output == model: run_dapo says so
        check_training_paths(cfg.model, cfg.output, cfg.metrics, inputs, overwrite=overwrite)
    if follow:
        from swerl_cli.training.follow import FollowOptions

        opts = FollowOptions(cfg.model, cfg.output, max_staleness, groups_per_update, push, max_updates, idle_timeout)
        _follow(inputs or ["-"], cfg, opts)
        return
    if dist.world_size() > 1 and (not inputs or "-" in inputs):
        raise ConfigError("under a multi-process launcher every rank reads the data: pass input files, not stdin")
    summary = run_dapo(read_many(inputs or []), cfg, err_console.print, TrackerSpec(tensorboard, wandb))
    if summary is not None:  # ranks other than 0 return None
        with open_output(None) as out:
            out.write(summary)


def _follow(inputs: list[str], cfg: object, opts: object) -> None:
    """`--follow`: one input stream; each committed update's summary record on stdout as it lands."""
    from swerl_cli.core.errors import UsageError
    from swerl_cli.streams.outputs import open_output
    from swerl_cli.training.follow import check_run_dir, run_follow

    if len(inputs) != 1:
        raise UsageError(f"--follow reads one stream (a file the grader appends to, or -), got {len(inputs)} inputs")
    check_run_dir(opts)  # type: ignore[arg-type]
    with open_output(None) as out:
        for summary in run_follow(inputs[0], cfg, opts, err_console.print):  # type: ignore[arg-type]
            out.write(summary)
