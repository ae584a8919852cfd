"""Training losses, one registered class per name (`loss:` in the rft / dapo config): see base.py.

dapo  the paper's clipped token-level DAPO objective (dapo's default)
tis   DAPO x a truncated importance weight min(pi_old / pi_infer, is_cap) per token
mis   DAPO x the importance weight pi_old / pi_infer, tokens outside [is_floor, is_cap] masked
ipo   DAPO with tokens masked where |pi_train - pi_infer| > ipo_eps (probabilities, not a ratio)
sft   masked NLL (rft's default)

Every module of this package is imported here, so a new loss is one module with one `@register` class (its
`@register` runs on import); nothing else names it.
"""

import importlib
import pkgutil

from swerl_cli.training.losses.base import LOSSES, Loss, LossInputs, check_loss, get_loss, loss_names, register
from swerl_cli.training.losses.dapo import dapo_policy_loss, masked_abs_diff_sum, token_logprobs

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "LOSSES",
    "Loss",
    "LossInputs",
    "check_loss",
    "dapo_policy_loss",
    "get_loss",
    "loss_names",
    "masked_abs_diff_sum",
    "register",
    "token_logprobs",
]
