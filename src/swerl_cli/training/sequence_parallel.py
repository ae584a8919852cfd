"""Ulysses sequence parallelism (DeepSpeed's ALST) for the engine: register the attention, slice a packed row over
the SP group, gather the per-token logprobs back.

The ranks form groups of N consecutive ranks; each member runs a contiguous 1/N slice of every packed row, the
attention all-to-alls give each member the full row for 1/N of the heads, and the per-token logprobs (T floats) are
all-gathered so every member computes the same loss.
"""

from __future__ import annotations

from typing import Any

from swerl_cli.core.errors import ConfigError, first_line


def register_ulysses(model: Any, attn: str, sp: int) -> Any:
    """Register DeepSpeed's Ulysses attention around `attn` for this model; returns the SP groups (mpu)."""
    from deepspeed.runtime.sequence_parallel.ulysses_sp import UlyssesSPAttentionHF

    try:
        return UlyssesSPAttentionHF.register_with_transformers(
            model_name_or_path=model,
            core_attn_implementation=attn,
            sequence_parallel_size=sp,
            micro_batch_size=1,
            seq_length_is_variable=True,
        )
    except (ValueError, RuntimeError) as e:
        first = first_line(e)
        raise ConfigError(f"--sequence-parallel {sp}: {first}") from None


def sp_slice(sp: int, sp_rank: int, *rows: Any) -> list[Any]:
    """This SP rank's contiguous slice of each (1, T) row, T padded to a multiple of `sp`.

    Padding is a separate pseudo-document (position_ids restart at 0; target -1), so no real token attends to it.
    """
    import torch

    ids, pos, targets = rows
    n = ids.shape[1]
    padded = -(-n // sp) * sp
    if padded != n:
        extra = padded - n
        ids = torch.cat([ids, torch.zeros_like(ids[:, :1]).expand(1, extra)], dim=1)
        pos = torch.cat([pos, torch.arange(extra, device=pos.device, dtype=pos.dtype).unsqueeze(0)], dim=1)
        targets = torch.cat([targets, torch.full_like(targets[:, :1], -1).expand(1, extra)], dim=1)
    chunk = padded // sp
    sl = slice(sp_rank * chunk, (sp_rank + 1) * chunk)
    return [ids[:, sl].contiguous(), pos[:, sl].contiguous(), targets[:, sl].contiguous()]


def gather_sequence(local: Any, group: Any, sp_rank: int) -> Any:
    """All-gather the SP group's (1, n/sp) slices into (1, n).

    Every SP rank then computes the same loss on the same full row, so the gradient of its own slice is exactly the
    local gradient of that slice: backward keeps its slice and needs no communication.
    """
    import torch

    class _Gather(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            parts = [torch.empty_like(x) for _ in range(torch.distributed.get_world_size(group))]
            torch.distributed.all_gather(parts, x.contiguous(), group=group)
            ctx.n = x.shape[1]
            return torch.cat(parts, dim=1)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad[:, sp_rank * ctx.n : (sp_rank + 1) * ctx.n].contiguous()

    return _Gather.apply(local)
