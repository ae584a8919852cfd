"""Training losses, one registry (short name -> "module:Class", as the other seams), selected by the rft / dapo
config's `loss` field; what a loss is: base.py.

dapo  the paper's clipped token-level DAPO objective (dapo's default)
tis   DAPO x a truncated importance weight min(pi_old / pi_infer, is_cap) per token
mis   DAPO x the importance weight pi_old / pi_infer, tokens outside [is_floor, is_cap] masked
ipo   DAPO with tokens masked where |pi_train - pi_infer| > ipo_eps (probabilities, not a ratio)
sft   masked NLL (rft's default)

A new loss is one module with one `Loss` class and one line in LOSSES (or `register_loss(name, "module:Class")` from
outside the package); `create(name, **options)` builds it from its own `Options`, read by name from the options
given (a config's fields), and `choices(stage)` lists what a stage may select.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from swerl_cli.core.errors import ConfigError
from swerl_cli.core.plugins import Registry
from swerl_cli.training.losses.base import Loss, LossInputs, LossOptions
from swerl_cli.training.losses.dapo import dapo_policy_loss, masked_abs_diff_sum, token_logprobs

LOSSES = Registry(
    {
        "dapo": "swerl_cli.training.losses.dapo:DapoLoss",
        "tis": "swerl_cli.training.losses.offpolicy:TisLoss",
        "mis": "swerl_cli.training.losses.offpolicy:MisLoss",
        "ipo": "swerl_cli.training.losses.offpolicy:IpoLoss",
        "sft": "swerl_cli.training.losses.sft:SftLoss",
    }
)
register_loss = LOSSES.register  # add (or replace) a loss as `"module:Class"` (a Loss subclass)
STAGES = ("rft", "dapo")

__all__ = [
    "LOSSES",
    "STAGES",
    "Loss",
    "LossInputs",
    "LossOptions",
    "check_loss",
    "choices",
    "create",
    "dapo_policy_loss",
    "from_config",
    "loss_class",
    "masked_abs_diff_sum",
    "register_loss",
    "token_logprobs",
]


def loss_class(name: str) -> type[Loss]:
    """The class registered under `name`, imported now; ConfigError naming the choices when there is none."""
    cls: type[Loss] = LOSSES.load(name, f"unknown loss {name!r}; choose one of {', '.join(choices())}")
    return cls


def choices(stage: str | None = None) -> list[str]:
    """The registered losses (those `stage` may select, when given), sorted."""
    return sorted(n for n in LOSSES if stage is None or loss_class(n).stage == stage)


def create(name: str, **options: Any) -> Loss:
    """The loss `name`, configured by its own `Options` read from `options` by name (others are ignored)."""
    cls = loss_class(name)
    return cls(cls.Options.from_options(**options))


def check_loss(name: str, stage: str) -> None:
    """ConfigError naming the field when `name` is not a registered loss of `stage`."""
    if name not in choices(stage):
        raise ConfigError(
            f"{stage} config: field 'loss': unknown loss {name!r}; choose one of {', '.join(choices(stage))}"
        )


def from_config(cfg: Any, stage: str) -> Loss:
    """The loss a stage's config selects (`cfg.loss`), built from the config's fields of its options' names."""
    check_loss(cfg.loss, stage)
    return create(cfg.loss, **{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)})
