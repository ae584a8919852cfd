"""Off-policy corrections beside the paper's loss: the DAPO objective with a per-token weight (docs/training.md).

Three policies meet in an asynchronous update: pi_infer sampled the token (the sampler's recorded logprob, possibly
some optimizer steps stale, and computed by other kernels), pi_old is the trainer's recomputation before this
update, and pi_theta the policy being trained. DAPO's ratio pi_theta / pi_old is kept as it is; the correction
reweights or masks each action token by how far pi_old (or pi_train) has moved from pi_infer:

    tis  w = min(pi_old / pi_infer, is_cap)                        truncated importance sampling
    mis  w = pi_old / pi_infer, 0 where it is outside [is_floor, is_cap]   masked importance sampling
    ipo  w = 0 where |pi_train - pi_infer| > ipo_eps, else 1        probability-difference masking (pi_train: the
                                                                    current trainer probability, no gradient)

Weights carry no gradient. A masked token keeps its place in the normaliser (it counts as an action token with
weight 0), so masking never rescales the other tokens' terms. The weights' statistics are emitted every step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swerl_cli.training.losses.base import Loss, LossInputs
from swerl_cli.training.losses.dapo import DapoLoss, DapoOptions, dapo_policy_loss


def _masked_extremes(values: Any, mask: Any, prefix: str) -> dict[str, Any]:
    """max and min of `values` over `mask`, with sentinels so an empty row stays defined."""
    import torch

    big = torch.finfo(values.dtype).max
    picked = values[mask > 0]
    return {
        f"{prefix}_max": torch.cat([picked, values.new_tensor([-big])]).max(),
        f"{prefix}_min": torch.cat([picked, values.new_tensor([big])]).min(),
    }


def is_ratio(old_logp: Any, infer_logp: Any, mask: Any) -> Any:
    """pi_old / pi_infer per token; 1.0 on masked positions (so exp() never sees padding)."""
    import torch

    log_r = torch.where(mask > 0, old_logp - infer_logp.to(old_logp.dtype), torch.zeros_like(old_logp))
    return torch.exp(log_r)


def tis_weights(old_logp: Any, infer_logp: Any, mask: Any, cap: float) -> tuple[Any, dict[str, Any]]:
    """Truncated IS: min(ratio, cap); stats count the capped tokens."""
    import torch

    with torch.no_grad():
        m = mask.to(old_logp.dtype)
        r = is_ratio(old_logp, infer_logp, m)
        w = torch.clamp(r, max=cap)
        stats = {"is_ratio_sum": (r * m).sum(), "is_capped": ((r > cap).to(m.dtype) * m).sum()}
        stats.update(_masked_extremes(r, m, "is_ratio"))
    return w, stats


def mis_weights(old_logp: Any, infer_logp: Any, mask: Any, cap: float, floor: float) -> tuple[Any, dict[str, Any]]:
    """Masked IS: the ratio itself, 0 outside [floor, cap]; stats count the masked tokens."""
    import torch

    with torch.no_grad():
        m = mask.to(old_logp.dtype)
        r = is_ratio(old_logp, infer_logp, m)
        outside = (r > cap) | (r < floor)
        w = torch.where(outside, torch.zeros_like(r), r)
        stats = {"is_ratio_sum": (r * m).sum(), "is_masked": (outside.to(m.dtype) * m).sum()}
        stats.update(_masked_extremes(r, m, "is_ratio"))
    return w, stats


def ipo_weights(logp: Any, infer_logp: Any, mask: Any, eps: float) -> tuple[Any, dict[str, Any]]:
    """Probability-difference masking: 0 where |exp(logp) - exp(infer)| > eps (both sides, any advantage sign)."""
    import torch

    with torch.no_grad():
        m = mask.to(logp.dtype)
        diff = torch.where(m > 0, (logp.exp() - infer_logp.to(logp.dtype).exp()).abs(), torch.zeros_like(logp))
        masked = diff > eps
        w = (~masked).to(logp.dtype)
        stats = {"prob_diff_sum": (diff * m).sum(), "ipo_masked": (masked.to(m.dtype) * m).sum()}
        stats.update(_masked_extremes(diff, m, "prob_diff"))
    return w, stats


@dataclass(frozen=True, slots=True)
class TisOptions(DapoOptions):
    """`--is-cap`: tis caps the weight pi_old / pi_infer at it; mis masks the tokens above it."""

    is_cap: float = 2.0


@dataclass(frozen=True, slots=True)
class MisOptions(TisOptions):
    """`--is-floor`: mis masks the tokens whose weight pi_old / pi_infer is below it."""

    is_floor: float = 0.5


@dataclass(frozen=True, slots=True)
class IpoOptions(DapoOptions):
    """`--ipo-eps`: ipo masks the tokens with |pi_train - pi_infer| above it (prime-rl's 0.3)."""

    ipo_eps: float = 0.3


class _Corrected(Loss):
    """DAPO times a correction weight; subclasses say how the weight is made (`weights`) and name the metrics it
    reports: `<measure>_mean` and `<measure>_<extreme>` of the per-token measure, `<counted>_frac` of the tokens."""

    stage = "dapo"
    needs_sampler_logprobs = True
    measure = "is_ratio"
    extremes: tuple[str, ...] = ("max", "min")
    counted = ""

    def weights(self, x: LossInputs) -> tuple[Any, dict[str, Any]]:
        raise NotImplementedError

    def __call__(self, x: LossInputs, normalizer: float | None) -> tuple[Any, dict[str, Any]]:
        w, extra = self.weights(x)
        o = self.options
        loss, stats = dapo_policy_loss(x.logp, x.old_logp, x.advantages, x.mask, o.eps_low, o.eps_high, normalizer, w)
        return loss, {**stats, **extra}

    def metrics(self, s: dict[str, float]) -> dict[str, Any]:
        n = max(s.get("tokens", 0.0), 1.0)
        out: dict[str, Any] = {f"{self.measure}_mean": s[f"{self.measure}_sum"] / n}
        out.update({f"{self.measure}_{e}": s.get(f"{self.measure}_{e}") for e in self.extremes})
        return {**out, f"{self.counted}_frac": s[self.counted] / n}


class TisLoss(_Corrected):
    name, Options = "tis", TisOptions
    counted = "is_capped"
    stats = (*DapoLoss.stats, "is_ratio_sum", "is_capped", "is_ratio_max", "is_ratio_min")

    def weights(self, x: LossInputs) -> tuple[Any, dict[str, Any]]:
        return tis_weights(x.old_logp, x.infer_logp, x.mask, self.options.is_cap)


class MisLoss(_Corrected):
    name, Options = "mis", MisOptions
    counted = "is_masked"
    stats = (*DapoLoss.stats, "is_ratio_sum", "is_masked", "is_ratio_max", "is_ratio_min")

    def weights(self, x: LossInputs) -> tuple[Any, dict[str, Any]]:
        return mis_weights(x.old_logp, x.infer_logp, x.mask, self.options.is_cap, self.options.is_floor)


class IpoLoss(_Corrected):
    name, Options = "ipo", IpoOptions
    stats = (*DapoLoss.stats, "prob_diff_sum", "ipo_masked", "prob_diff_max", "prob_diff_min")
    measure = "prob_diff"
    extremes = ("max",)
    counted = "ipo_masked"

    def weights(self, x: LossInputs) -> tuple[Any, dict[str, Any]]:
        return ipo_weights(x.logp.detach(), x.infer_logp, x.mask, self.options.ipo_eps)
