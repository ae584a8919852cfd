"""RftConfig: every knob of `swerl rft`, paper defaults (RFT: lr 5e-6, wd 0.1, 10 warmup + cosine, batch 64,
1 epoch, 65k context), validated with a remedy. Free of torch so `swerl rft --help` stays light."""

from __future__ import annotations

from dataclasses import dataclass

from swerl_cli.core.config import flag
from swerl_cli.core.errors import ConfigError
from swerl_cli.training.data import TOO_LONG_POLICIES
from swerl_cli.training.losses import check_loss
from swerl_cli.training.train_config import TrainConfig


@dataclass(frozen=True, slots=True)
class RftConfig(TrainConfig):
    """One RFT run. Field names are the CLI flags with '-' for '_'; the model, output and metrics paths and the
    optimizer/engine fields come from TrainConfig."""

    model: str = flag("", "Base model: a save_pretrained directory or hub name.", names=("--model", "-m"))
    output: str = flag("", "Checkpoint directory to write.", names=("--output", "-o"))
    # Optimisation (paper §4.2); the other optimizer fields keep TrainConfig's defaults (AdamW 0.9/0.999/1e-8,
    # weight decay 0.1, clip 1.0).
    lr: float = flag(5e-6, "Peak learning rate (paper 5e-6).")
    warmup_steps: int = flag(10, "Linear warmup steps before the cosine decay (paper 10).")
    lr_schedule: str = flag("cosine", "cosine (to 0 at the last step) or constant.")
    epochs: int = flag(1, "Passes over the data (paper 1).")
    batch_size: int = flag(64, "Sequences per optimizer step, over all ranks (paper 64).")
    batch_tokens: int | None = flag(None, "Tokens per optimizer step instead of --batch-size.")
    # default: max_seq_len
    micro_batch_tokens: int | None = flag(None, "Token budget of one packed forward/backward per rank.")
    max_seq_len: int = flag(65536, "Longest sequence in tokens (paper 65536).")
    # the lr schedule still spans the full run
    max_steps: int | None = flag(None, "Stop after this many optimizer steps.")
    seed: int = flag(0, "Seed for the shuffle and the engine.")
    shuffle: bool = flag(True, "Shuffle sequences (seeded) before cutting them into steps.")
    # Data.
    too_long: str = flag("error", "Longer sequences: error, truncate (masked tail) or drop.")
    skip_invalid: bool = flag(False, "Skip (and count) unusable records instead of failing.")
    loss: str = "sft"  # training/losses registry: the masked NLL
    mask_format_errors: bool = flag(  # paper Figure 2: format-error turns are not trained on
        True, "Mask assistant turns flagged format_error.", names=("--mask-format-errors/--train-format-errors",)
    )
    rerender: bool = flag(False, "Re-render with the chat template when token ids cannot be used.")
    skip_unrebuildable: bool = flag(  # counted in data.skipped_unrebuildable
        False, "Drop (and count) trajectories whose token ids cannot be rebuilt (prefix_ok false)."
    )
    # Outputs.
    save_every: int = flag(0, "Resumable DeepSpeed checkpoint every N steps (0: none).")
    save_optimizer: bool = flag(  # OUTPUT/optimizer_state: what `dapo --init-optimizer OUTPUT` starts from
        False, "Save the final AdamW state in OUTPUT/optimizer_state for `dapo --init-optimizer`."
    )
    keep_checkpoints: int = 2
    resume: bool = flag(False, "Continue from the last checkpoint under OUTPUT/ds_checkpoints.")
    report_to: str = flag("none", "Also log to: none, tensorboard (beside metrics.jsonl) or wandb.")

    def __post_init__(self) -> None:
        def bad(field: str, msg: str) -> ConfigError:
            return ConfigError(f"rft config: field '{field}': {msg}")

        TrainConfig.validate(self, "rft")
        check_loss(self.loss, "rft")
        if not self.model:
            raise bad("model", "required: a local save_pretrained dir or hub name (--model PATH)")
        if not self.output:
            raise bad("output", "required: the checkpoint directory to write (--output DIR)")
        if self.lr <= 0:
            raise bad("lr", f"must be > 0, got {self.lr}; the paper uses 5e-6")
        if self.batch_size < 1:
            raise bad("batch_size", f"must be >= 1, got {self.batch_size}; the paper uses 64")
        if self.batch_tokens is not None and self.batch_tokens < 1:
            raise bad("batch_tokens", f"must be >= 1 when set, got {self.batch_tokens}")
        if self.micro_batch_tokens is not None and self.micro_batch_tokens < self.max_seq_len:
            raise bad(
                "micro_batch_tokens",
                f"{self.micro_batch_tokens} < max_seq_len {self.max_seq_len}: a sequence must fit one micro-batch; "
                "raise --micro-batch-tokens or lower --max-seq-len",
            )
        if self.too_long not in TOO_LONG_POLICIES:
            raise bad("too_long", f"one of {', '.join(TOO_LONG_POLICIES)}, got {self.too_long!r}")
        if self.epochs < 1:
            raise bad("epochs", f"must be >= 1, got {self.epochs}")
        if self.report_to not in ("none", "tensorboard", "wandb"):
            raise bad("report_to", f"none, tensorboard or wandb, got {self.report_to!r}")
        if self.save_every < 0:
            raise bad("save_every", f"must be >= 0, got {self.save_every}")
