"""The DAPO stage's side of the loss registry: the engine's per-micro-batch loss_fn for the configured loss, the
max/min statistics reduced over micro-batches and ranks, and the theta_old pass that recomputes pi_old.

    step_loss = batch_loss(from_config(cfg, "dapo"), norm, extremes)   # engine.train_step(batches, step_loss)
    fields = reduce_extremes(extremes, device)                               # {"ratio_max": ..., "ratio_min": ...}
"""

from __future__ import annotations

from typing import Any

from swerl_cli.training import dist
from swerl_cli.training.losses.base import Loss, LossInputs

Extremes = dict[str, list[float]]  # stat name -> per-micro-batch values (a `_min` stat stored negated)


def _infer_row(batch: Any, like: Any) -> Any:
    """The sampler's logprobs of the packed row (1, T), from each sample's kept `infer_logprobs`."""
    import torch

    if not batch.samples:
        return torch.zeros_like(like)
    values = [lp for s in batch.samples for lp in s.infer_logprobs]
    return torch.tensor(values, dtype=torch.float32, device=like.device).unsqueeze(0)


def batch_loss(loss: Loss, norm: float, extremes: Extremes, measure_gap: bool = False):
    """The engine's loss_fn(logp, batch): `loss` on the packed row, each token carrying its sample's advantage.

    With `measure_gap` (old_logprobs=sampler, first step: the forward runs under theta_old) it also sums
    |logprob(trainer) - logprob(sampler)| over the action tokens, at no extra cost.
    """
    from swerl_cli.training.losses.dapo import masked_abs_diff_sum

    def loss_fn(logp: Any, batch: Any) -> tuple[Any, dict[str, float]]:
        import torch

        per_sample = torch.tensor([s.advantage for s in batch.samples] + [0.0], dtype=logp.dtype)
        idx = batch.sample_index.clone()
        idx[idx < 0] = len(batch.samples)  # the empty row of an idle rank points at the trailing 0.0
        adv = per_sample.to(logp.device)[idx]  # (1, T)
        infer = _infer_row(batch, logp) if loss.needs_sampler_logprobs else None
        value, st = loss(LossInputs(logp, batch.loss_mask, batch.old_logprobs, adv, infer), norm)
        out: dict[str, float] = {}
        for k, v in st.items():
            if k.endswith(("_max", "_min")):
                # every rank registers the name, an idle one too, so all ranks enter reduce_extremes' all_reduce
                seen = extremes.setdefault(k, [])
                if st["tokens"] > 0:  # an empty row's sentinels say nothing
                    seen.append(float(v) if k.endswith("_max") else -float(v))
            else:
                out[k] = float(v)
        if measure_gap:
            out["gap_sum"], out["gap_n"] = masked_abs_diff_sum(logp.detach(), batch.old_logprobs, batch.loss_mask)
        # -log p of the sampled action tokens under the policy being updated: their mean is a Monte-Carlo estimate
        # of its per-token entropy (the collapse DAPO's clip-higher guards against), from logprobs the loss has
        out["entropy_sum"] = float(-torch.where(batch.loss_mask > 0, logp.detach(), 0.0).sum())
        return value, out

    return loss_fn


def reduce_extremes(extremes: Extremes, device: str) -> dict[str, float | None]:
    """Each `_max` / `_min` stat over this step's micro-batches and all ranks (None where no token had one)."""
    import math

    names = sorted(extremes)
    vals = [max(extremes[k], default=-math.inf) for k in names]
    if dist.world_size() > 1 and names:
        import torch

        t = torch.tensor(vals, dtype=torch.float64, device=device)
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
        vals = t.tolist()
    out: dict[str, float | None] = {}
    for k, v in zip(names, vals, strict=True):
        out[k] = None if not math.isfinite(v) else (v if k.endswith("_max") else -v)
    return out


def old_logprob_pass(engine: Any, plans: list[Any], samples: list[Any], pad: int) -> list[float | None]:
    """No-grad forward with theta_old over every kept sequence: per-step mean |trainer - sampler| logprob gap.

    The recomputed values replace the samples' logprobs (pi_old of the ratio); the sampler's stay in
    `infer_logprobs` where a correction needs them.
    """
    import torch

    from swerl_cli.training.batching import rank_micro_batches
    from swerl_cli.training.losses.dapo import masked_abs_diff_sum

    diffs: list[tuple[float, float]] = []
    for plan in plans:
        gap, count = 0.0, 0.0
        for mb in rank_micro_batches(plan, samples, engine.dp_rank, pad):
            with torch.no_grad():
                logp = engine.forward_logprobs(mb).float().cpu()  # (1, T)
            for k, s in enumerate(mb.samples):
                mine_lp = logp[0, mb.sample_index[0] == k]
                if s.has_logprobs and engine.sp_rank == 0:  # an SP group's members hold the same samples
                    mask = torch.tensor(s.loss_mask, dtype=torch.float32)
                    g, n = masked_abs_diff_sum(mine_lp, torch.tensor(s.logprobs), mask)
                    gap, count = gap + g, count + n
                s.logprobs = mine_lp.tolist()
        gap, count = dist.all_reduce_sum([gap, count], engine.device)
        diffs.append((gap, count))
    return [g / n if n > 0 else None for g, n in diffs]
