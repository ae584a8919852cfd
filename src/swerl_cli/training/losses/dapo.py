"""The paper's DAPO loss (`loss: dapo`, the default): pure tensor functions, no model, no globals, no distributed
state, and its registry entry.

The DAPO objective of the paper (Eq. 8), token level, no KL, no entropy bonus:

    J = 1/N * sum_i sum_t sum_k min(rho * A_i, clip(rho, 1 - eps_low, 1 + eps_high) * A_i)

with rho = exp(logp - old_logp) per action token, A_i the group advantage of trajectory i broadcast to all its
action tokens, and N the number of action tokens of the batch. The loss is -J. `N` is passed in explicitly
(`normalizer`) because under gradient accumulation and data parallelism a micro-batch only sees part of the
batch whose tokens normalise the sum; the caller owns that choice (see training/dapo.py and docs/training.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swerl_cli.training.losses.base import Loss, LossInputs, LossOptions


def token_logprobs(logits: Any, targets: Any) -> Any:
    """Log-probability of each target token: logits (B, T, V), targets (B, T) -> (B, T), computed in fp32."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)  # (B, T, V)
    return logp.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)  # (B, T)


def dapo_policy_loss(
    logp: Any,
    old_logp: Any,
    advantages: Any,
    mask: Any,
    eps_low: float,
    eps_high: float,
    normalizer: float | None = None,
    weights: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """Clipped token-level DAPO loss summed over masked tokens / normalizer, and its detached stats sums.

    Shapes: logp, old_logp, mask (B, T); advantages (B,) per sequence or (B, T) per token (packed rows).
    `normalizer` defaults to the number of masked tokens in this call. Stats are sums (tokens, ratio, clip
    counts, ...) so callers can aggregate them over micro-batches and ranks before dividing. `weights` (B, T),
    detached, multiplies each token's term (the off-policy corrections: an importance weight, 0 masks a token);
    None is the paper's loss, computed exactly as without the argument.
    """
    import torch

    mask = mask.to(logp.dtype)  # (B, T)
    adv = advantages.to(logp.dtype)
    if adv.dim() == 1:
        adv = adv.unsqueeze(-1)  # (B, 1), broadcast over the sequence
    n_tokens = mask.sum()
    norm = n_tokens.clamp(min=1.0) if normalizer is None else torch.as_tensor(float(normalizer), dtype=logp.dtype)
    # Masked positions get a zero log-ratio so exp() cannot overflow on garbage (e.g. padding).
    log_ratio = torch.where(mask > 0, logp - old_logp.to(logp.dtype), torch.zeros_like(logp))
    ratio = torch.exp(log_ratio)  # (B, T)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) * adv
    per_token = -torch.minimum(unclipped, clipped)  # (B, T)
    if weights is not None:
        per_token = per_token * weights.to(logp.dtype)
    loss = (per_token * mask).sum() / norm
    with torch.no_grad():
        # The min() picks the clipped branch (zero gradient) exactly in these two cases.
        low = ((ratio < 1.0 - eps_low) & (adv < 0)).to(logp.dtype) * mask
        high = ((ratio > 1.0 + eps_high) & (adv > 0)).to(logp.dtype) * mask
        big = torch.finfo(logp.dtype).max
        stats = {
            "tokens": n_tokens.detach(),
            "ratio_sum": (ratio * mask).sum().detach(),
            # a sentinel keeps max/min defined on an empty or fully masked row (an idle rank's)
            "ratio_max": torch.cat([ratio[mask > 0], ratio.new_tensor([-big])]).max().detach(),
            "ratio_min": torch.cat([ratio[mask > 0], ratio.new_tensor([big])]).min().detach(),
            "clip_low": low.sum(),
            "clip_high": high.sum(),
            "loss_sum": (per_token * mask).sum().detach(),
        }
    return loss, stats


def masked_abs_diff_sum(a: Any, b: Any, mask: Any) -> tuple[float, float]:
    """(sum of |a - b| over mask, number of masked tokens): for the trainer-vs-sampler logprob gap."""
    import torch

    with torch.no_grad():
        m = mask.to(torch.float64)
        return float(((a.double() - b.double()).abs() * m).sum()), float(m.sum())


@dataclass(frozen=True, slots=True)
class DapoOptions(LossOptions):
    """The clip of Eq. 8, read by every dapo-stage loss (`--eps-low`, `--eps-high`; paper Table 3, stage 1)."""

    eps_low: float = 0.2
    eps_high: float = 0.3


class DapoLoss(Loss):
    """The paper's clipped token-level objective (Eq. 8) with pi_old as given (`old_logp`)."""

    name, stage, Options = "dapo", "dapo", DapoOptions
    stats = ("tokens", "ratio_sum", "ratio_max", "ratio_min", "clip_low", "clip_high", "loss_sum")

    def __call__(self, x: LossInputs, normalizer: float | None) -> tuple[Any, dict[str, Any]]:
        o = self.options
        return dapo_policy_loss(x.logp, x.old_logp, x.advantages, x.mask, o.eps_low, o.eps_high, normalizer)
