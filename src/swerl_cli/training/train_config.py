"""TrainConfig: what `swerl rft` and `swerl dapo` share, declared once: the model to train, where the checkpoint
and metrics go, and the optimizer and engine fields.

RftConfig and DapoConfig extend it, and the engine (engine.py) takes any of them; a stage changes a default by
redeclaring the field (RFT: lr 5e-6, 10 warmup steps, cosine; DAPO: lr 1e-6, constant). Free of torch so `--help`
stays light.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from swerl_cli.core.errors import ConfigError

ATTN_IMPLEMENTATIONS = ("auto", "packed_sdpa", "sdpa", "flash_attention_2", "eager")


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Paths (model in, checkpoint and metrics out), optimizer (AdamW + warmup/schedule + clipping) and engine
    (ZeRO, dtype, attention, SP) knobs."""

    model: str = ""  # the model to train: a save_pretrained dir or hub name (dapo: checkpoint k)
    output: str = ""  # the checkpoint directory to write (dapo: checkpoint k+1), published whole (publish.py)
    metrics: str | None = None  # the metrics JSONL; default OUTPUT/metrics.jsonl
    lr: float = 5e-6
    weight_decay: float = 0.1
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    grad_clip: float = 1.0
    warmup_steps: int = 0
    lr_schedule: str = "constant"  # constant | cosine (to 0 at the last step)
    seed: int = 0
    zero_stage: int = 2
    offload: bool = False  # optimizer state (and ZeRO-3 parameters) in CPU memory
    gradient_checkpointing: bool = False
    dtype: str = "auto"  # auto: bf16 on CUDA, fp32 on CPU
    # auto: flash_attention_2 on CUDA when flash-attn is installed, else packed_sdpa (per-document SDPA); both
    # attend within each packed document only. sdpa/eager build a dense (T, T) block mask (slow; for comparison).
    attn_implementation: str = "auto"
    sequence_parallel: int = 1  # Ulysses SP degree: each sequence is split over this many ranks
    max_seq_len: int = 65536

    def __post_init__(self) -> None:
        self.validate("train")

    def validate(self, kind: str) -> None:
        """One-line ConfigError naming `kind config: field 'x'` and the fix; subclasses call it first."""

        def bad(field: str, msg: str) -> ConfigError:
            return ConfigError(f"{kind} config: field '{field}': {msg}")

        if self.lr <= 0:
            raise bad("lr", f"must be > 0, got {self.lr}")
        if self.grad_clip < 0:
            raise bad("grad_clip", f"must be >= 0 (0 disables), got {self.grad_clip}")
        if self.warmup_steps < 0:
            raise bad("warmup_steps", f"must be >= 0, got {self.warmup_steps}")
        if self.lr_schedule not in ("constant", "cosine"):
            raise bad("lr_schedule", f"constant or cosine, got {self.lr_schedule!r}")
        if self.zero_stage not in (0, 1, 2, 3):
            raise bad("zero_stage", f"must be 0, 1, 2 or 3, got {self.zero_stage}; use 2 or 3")
        if self.dtype not in ("auto", "bf16", "fp32"):
            raise bad("dtype", f"auto, bf16 or fp32, got {self.dtype!r}")
        if self.attn_implementation not in ATTN_IMPLEMENTATIONS:
            allowed = ", ".join(ATTN_IMPLEMENTATIONS)
            raise bad("attn_implementation", f"one of {allowed}, got {self.attn_implementation!r}")
        if self.sequence_parallel < 1:
            raise bad("sequence_parallel", f"must be >= 1, got {self.sequence_parallel}")
        if self.sequence_parallel > 1 and self.attn_implementation in ("sdpa", "eager"):
            raise bad(
                "attn_implementation",
                f"{self.attn_implementation} cannot keep packed documents apart under --sequence-parallel (Ulysses "
                "drops the dense mask): use auto, packed_sdpa or flash_attention_2",
            )
        if self.max_seq_len < 2:
            raise bad("max_seq_len", f"must be >= 2, got {self.max_seq_len}")


def field_names(cls: type) -> set[str]:
    """Every dataclass field of `cls`, inherited ones included (the CLI's flag filter)."""
    return {f.name for f in dataclasses.fields(cls)}
