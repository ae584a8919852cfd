"""A trajectory as a training sequence (`Sample`), the counts a data load reports (`DataStats`), and the rule both
ways of building a sample share: which turns are never trained on (`untrained`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Sample:
    """One trajectory as a training sequence. `record` is the source object (rewards, groups, stats for DAPO)."""

    id: str
    source: str
    line: int
    input_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    has_logprobs: bool
    record: dict[str, Any] = field(repr=False, default_factory=dict)
    truncated: int = 0
    advantage: float = 0.0  # DAPO: the group advantage broadcast to every action token (0.0 in RFT)
    infer_logprobs: list[float] = field(default_factory=list)  # DAPO corrections: the sampler's, kept apart

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def n_trainable(self) -> int:
        """Number of tokens with loss mask 1."""
        return sum(self.loss_mask)


@dataclass(slots=True)
class DataStats:
    """Counts reported in the run summary: what was read, skipped, truncated or dropped."""

    records: int = 0
    samples: int = 0
    skipped: int = 0
    truncated: int = 0
    dropped_too_long: int = 0
    rerendered: int = 0
    skipped_unrebuildable: int = 0
    tokens: int = 0
    trainable_tokens: int = 0
    format_error_turns_masked: int = 0
    masked_turns: int = 0  # turns flagged `masked` (a demonstration's deliberate mistake), never trained on
    skip_reasons: dict[str, int] = field(default_factory=dict)
    # The trained samples per the records' `run` name (where the data came from: e.g. `bootstrap-gold-demos`).
    runs: dict[str, int] = field(default_factory=dict)


def untrained(turn: dict[str, Any], mask_format_errors: bool, stats: DataStats) -> bool:
    """True when `turn` gets loss mask 0: flagged `masked`, or a format error under `mask_format_errors` (counted)."""
    if turn.get("masked") is True:
        stats.masked_turns += 1
        return True
    if turn.get("format_error") is True and mask_format_errors:
        stats.format_error_turns_masked += 1
        return True
    return False
