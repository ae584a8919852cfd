"""Attention over packed rows that never computes across documents, and the choice of implementation.

A packed row holds several documents back to back, `position_ids` restarting at 0 at each one. transformers'
`sdpa` turns the restarts into a dense (T, T) block mask: T^2 work and memory although only sum(L_i^2) of it is
needed, and a masked SDPA cannot use the fused causal kernel. `packed_sdpa` (registered with transformers'
AttentionInterface) runs causal SDPA on each document's slice instead, so a row costs sum(L_i^2) and each call
takes the fused path. On GPU, `flash_attention_2` does the same with flash-attn's variable-length kernel
(transformers derives cu_seqlens from the restarts). Both read the boundaries from `position_ids`, which Ulysses
sequence parallelism gathers to full length before calling the core attention, so they work under SP too.
"""

from __future__ import annotations

from typing import Any

PACKED_SDPA = "packed_sdpa"
_registered = False


def document_bounds(position_ids: Any) -> list[tuple[int, int]]:
    """[(start, end), ...] of the documents of a packed (1, T) row: a new one wherever position != previous + 1.

    `document_bounds(tensor([[0, 1, 2, 0, 1]])) == [(0, 3), (3, 5)]`.
    """
    import torch

    pos = position_ids[0]
    n = int(pos.shape[0])
    if n == 0:
        return []
    breaks = (torch.nonzero(pos[1:] - pos[:-1] != 1).flatten() + 1).tolist()
    starts = [0, *breaks]
    return list(zip(starts, [*breaks, n], strict=True))


def packed_sdpa_forward(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """transformers attention function: causal SDPA per document. q (1, H, T, D), k/v (1, Hkv, T, D) -> (1, T, H, D)."""
    import torch.nn.functional as F

    position_ids = kwargs.get("position_ids")
    gqa = key.shape[1] != query.shape[1]
    if position_ids is None or query.shape[0] != 1 or attention_mask is not None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    import torch

    p = dropout if module.training else 0.0
    sizes = [e - s for s, e in document_bounds(position_ids)]
    # split, not one slice per document: a slice's backward writes its gradient into a zero tensor of the whole
    # row (n documents -> n full-size fills and adds), split's backward is one cat of the pieces.
    parts = [
        F.scaled_dot_product_attention(q, k, v, dropout_p=p, scale=scaling, is_causal=True, enable_gqa=gqa)
        for q, k, v in zip(*(x.split(sizes, dim=2) for x in (query, key, value)), strict=True)
    ]
    out = parts[0] if len(parts) == 1 else torch.cat(parts, dim=2)
    return out.transpose(1, 2).contiguous(), None


def register() -> None:
    """Make `attn_implementation="packed_sdpa"` known to transformers (no mask is built for it)."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface

    AttentionInterface.register(PACKED_SDPA, packed_sdpa_forward)
    _registered = True


def resolve(name: str, device: str) -> str:
    """transformers' attn_implementation for a config value; `auto`: flash-attn varlen on CUDA if installed."""
    if name == "auto":
        if device.startswith("cuda"):
            import importlib.util

            if importlib.util.find_spec("flash_attn") is not None:
                return "flash_attention_2"
        name = PACKED_SDPA
    if name == PACKED_SDPA:
        register()
    return name
