"""What a loss is: `Loss` (built from its own `Options`), the per-token tensors it sees, and its options base.
Free of torch at import.

    @dataclass(frozen=True, slots=True)
    class MyOptions(DapoOptions):              # the knobs this loss reads, each with its one default
        my_knob: float = 0.5

    class MyLoss(Loss):
        name, stage, Options = "my-loss", "dapo", MyOptions
        stats = (*DapoLoss.stats, "my_sum")    # the stats every call returns
        def __call__(self, x: LossInputs, normalizer: float | None) -> tuple[Tensor, dict[str, Tensor]]: ...

A loss sees one packed micro-batch as `LossInputs` (per-token tensors, shape (B, T)) and returns its share of the
step's objective (summed over its tokens, divided by `normalizer`: the step's or the iteration's action tokens) and
detached statistics. Stats named `*_max` are reduced with max over micro-batches and ranks, every other stat with a
sum; `metrics(summed)` turns the summed stats of one optimizer step into that loss's fields of a metrics line.
The registry (name -> "module:Class", `create`, `choices`) is the package's `__init__.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from swerl_cli.core.plugins import Options


@dataclass(slots=True)
class LossInputs:
    """One micro-batch's per-token tensors. `old_logp`: pi_old (the trainer's recomputed logprobs, or the
    sampler's); `infer_logp`: the sampler's own logprobs (what the inference server computed while sampling)."""

    logp: Any
    mask: Any
    old_logp: Any = None
    advantages: Any = None
    infer_logp: Any = None


@dataclass(frozen=True, slots=True)
class LossOptions(Options):
    """A loss's own options, read by name from the stage's config (`DapoConfig`, `RftConfig`), whose flag of the
    same name takes its default from here. None for a loss without knobs (sft)."""


class Loss:
    """Base of every registered loss. `stage`: which command may use it (rft or dapo); `stats`: the names every
    call returns (the contract suite checks them)."""

    name: ClassVar[str] = ""
    stage: ClassVar[str] = ""
    Options: ClassVar[type[LossOptions]] = LossOptions
    stats: ClassVar[tuple[str, ...]] = ()
    needs_sampler_logprobs: ClassVar[bool] = False  # true: the sampler's logprobs must be recorded and kept

    def __init__(self, options: LossOptions | None = None) -> None:
        self.options: Any = options if options is not None else self.Options()

    def __call__(self, x: LossInputs, normalizer: float | None) -> tuple[Any, dict[str, Any]]:
        raise NotImplementedError

    def metrics(self, s: dict[str, float]) -> dict[str, Any]:
        """This loss's own fields of a step's metrics line, from the step's reduced stats (none by default)."""
        return {}
