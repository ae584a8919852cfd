"""The loss registry: name -> class, selected by a training config's `loss` field. Free of torch at import.

    @register
    class MyLoss(Loss):
        name, stage = "my-loss", "dapo"
        def __call__(self, x: LossInputs, normalizer: float | None) -> tuple[Tensor, dict[str, Tensor]]: ...

A loss sees one packed micro-batch as `LossInputs` (per-token tensors, shape (B, T)) and returns its share of the
step's objective (summed over its tokens, divided by `normalizer`: the step's or the iteration's action tokens) and
detached statistics. Stats named `*_max` are reduced with max over micro-batches and ranks, every other stat with a
sum; `metrics(summed)` turns the summed stats of one optimizer step into that loss's fields of a metrics line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from swerl_cli.core.errors import ConfigError


@dataclass(slots=True)
class LossInputs:
    """One micro-batch's per-token tensors. `old_logp`: pi_old (the trainer's recomputed logprobs, or the
    sampler's); `infer_logp`: the sampler's own logprobs (what the inference server computed while sampling)."""

    logp: Any
    mask: Any
    old_logp: Any = None
    advantages: Any = None
    infer_logp: Any = None


class Loss:
    """Base of every registered loss. `stage`: which command may use it (rft or dapo)."""

    name: ClassVar[str] = ""
    stage: ClassVar[str] = ""
    needs_sampler_logprobs: ClassVar[bool] = False  # true: the sampler's logprobs must be recorded and kept

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg

    def __call__(self, x: LossInputs, normalizer: float | None) -> tuple[Any, dict[str, Any]]:
        raise NotImplementedError

    def metrics(self, s: dict[str, float]) -> dict[str, Any]:
        """This loss's own fields of a step's metrics line, from the step's reduced stats (none by default)."""
        return {}


LOSSES: dict[str, type[Loss]] = {}


def register(cls: type[Loss]) -> type[Loss]:
    """Class decorator: make `cls` selectable as `loss: <cls.name>`."""
    if not cls.name or cls.stage not in ("rft", "dapo"):
        raise ValueError(f"{cls.__name__}: a loss needs a name and a stage (rft or dapo)")
    LOSSES[cls.name] = cls
    return cls


def loss_names(stage: str) -> list[str]:
    """The registered losses a stage may select, sorted."""
    return sorted(n for n, c in LOSSES.items() if c.stage == stage)


def check_loss(name: str, stage: str) -> None:
    """ConfigError naming the field when `name` is not a registered loss of `stage`."""
    if name not in loss_names(stage):
        allowed = ", ".join(loss_names(stage))
        raise ConfigError(f"{stage} config: field 'loss': unknown loss {name!r}; choose one of {allowed}")


def get_loss(name: str, cfg: Any, stage: str) -> Loss:
    """An instance of the registered loss `name` configured by `cfg`."""
    check_loss(name, stage)
    return LOSSES[name](cfg)
