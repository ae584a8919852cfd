"""The RFT loss (`loss: sft`, rft's default): masked next-token NLL of the trainable tokens / the step's count."""

from __future__ import annotations

from typing import Any

from swerl_cli.training.losses.base import Loss, LossInputs


class SftLoss(Loss):
    """sum(-logp * mask) / max(normalizer, 1): the mean NLL over the step's trainable tokens (all ranks)."""

    name, stage = "sft", "rft"
    stats = ("nll_sum", "trainable_tokens")

    def __call__(self, x: LossInputs, normalizer: float | None) -> tuple[Any, dict[str, Any]]:
        nll = -(x.logp * x.mask).sum()  # scalar: this micro-batch's summed NLL over trainable tokens
        norm = float(x.mask.sum()) if normalizer is None else normalizer
        return nll / max(norm, 1.0), {"nll_sum": nll.detach(), "trainable_tokens": x.mask.sum()}
