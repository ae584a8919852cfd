"""TrainConfig: what `swerl rft` and `swerl dapo` share, declared once: the model to train, where the checkpoint
and metrics go, and the optimizer and engine fields.

RftConfig and DapoConfig extend it, and the engine (engine.py) takes any of them; a stage changes a default by
redeclaring the field (RFT: lr 5e-6, 10 warmup steps, cosine; DAPO: lr 1e-6, constant). Free of torch so `--help`
stays light.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from swerl_cli.core.config import flag
from swerl_cli.core.errors import ConfigError

ATTN_IMPLEMENTATIONS = ("auto", "packed_sdpa", "sdpa", "flash_attention_2", "eager")


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Paths (model in, checkpoint and metrics out), optimizer (AdamW + warmup/schedule + clipping) and engine
    (ZeRO, dtype, attention, SP) knobs."""

    # Fields with `flag(...)` are flags of rft and dapo (a stage redeclares a field for its own default or help).
    model: str = ""  # the model to train: a save_pretrained dir or hub name (dapo: checkpoint k)
    output: str = ""  # the checkpoint directory to write (dapo: checkpoint k+1), published whole (publish.py)
    metrics: str | None = flag(None, "Metrics JSONL path (default: OUTPUT/metrics.jsonl).")
    lr: float = 5e-6
    weight_decay: float = flag(0.1, "AdamW weight decay (paper 0.1).")
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    grad_clip: float = flag(1.0, "Gradient-norm clip (paper 1.0; 0 disables).")
    warmup_steps: int = 0
    lr_schedule: str = "constant"  # constant | cosine (to 0 at the last step)
    seed: int = 0
    zero_stage: int = flag(2, "DeepSpeed ZeRO stage (0-3).")
    offload: bool = flag(False, "Offload optimizer state (and ZeRO-3 params) to CPU memory.")
    gradient_checkpointing: bool = flag(False, "Recompute activations in backward.")
    dtype: str = flag("auto", "auto (bf16 on GPU, fp32 on CPU), bf16 or fp32.")
    # auto: flash_attention_2 on CUDA when flash-attn is installed, else packed_sdpa (per-document SDPA); both
    # attend within each packed document only. sdpa/eager build a dense (T, T) block mask (slow; for comparison).
    attn_implementation: str = flag(
        "auto",
        "Attention over packed rows: auto, packed_sdpa, flash_attention_2 (per document), or sdpa/eager (dense).",
    )
    sequence_parallel: int = flag(  # Ulysses SP degree
        1, "Ulysses sequence parallelism: split each sequence over N ranks (divides the world size)."
    )
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
        at_least(bad, 0, warmup_steps=self.warmup_steps)
        if self.lr_schedule not in ("constant", "cosine"):
            raise bad("lr_schedule", f"constant or cosine, got {self.lr_schedule!r}")
        if self.zero_stage not in (0, 1, 2, 3):
            raise bad("zero_stage", f"must be 0, 1, 2 or 3, got {self.zero_stage}; use 2 or 3")
        if self.dtype not in ("auto", "bf16", "fp32"):
            raise bad("dtype", f"auto, bf16 or fp32, got {self.dtype!r}")
        if self.attn_implementation not in ATTN_IMPLEMENTATIONS:
            allowed = ", ".join(ATTN_IMPLEMENTATIONS)
            raise bad("attn_implementation", f"one of {allowed}, got {self.attn_implementation!r}")
        at_least(bad, 1, sequence_parallel=self.sequence_parallel)
        if self.sequence_parallel > 1 and self.attn_implementation in ("sdpa", "eager"):
            raise bad(
                "attn_implementation",
                f"{self.attn_implementation} cannot keep packed documents apart under --sequence-parallel (Ulysses "
                "drops the dense mask): use auto, packed_sdpa or flash_attention_2",
            )
        if self.max_seq_len < 2:
            raise bad("max_seq_len", f"must be >= 2, got {self.max_seq_len}")


def at_least(bad: Callable[[str, str], ConfigError], minimum: int, **values: float) -> None:
    """Refuse the first of `values` (field name -> value, in order) below `minimum`: `must be >= minimum, got v`."""
    for name, value in values.items():
        if value < minimum:
            raise bad(name, f"must be >= {minimum}, got {value}")
