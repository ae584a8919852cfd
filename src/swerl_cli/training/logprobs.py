"""Per-token log-probabilities of packed rows without materialising the logits: what the engine trains on.

    wrapped = logprob_module(model, zero3=True)     # the module DeepSpeed wraps: forward(ids, pos, targets) -> (1, T)
    logp = packed_logprobs(model, batch)            # the same numbers without an engine (tests, references)
    lp = fused_logprobs(hidden, weight, bias, tgt)  # the chunked lm_head + log-softmax, one target per row

Torch is imported inside the functions, so importing this module stays light.
"""

from __future__ import annotations

from typing import Any

LOGIT_CHUNK = 4096  # tokens per lm_head chunk: bounds the fp32 (T, V) logits at 65k context


def logprob_module(model: Any, zero3: bool = False) -> Any:
    """Wrap a causal LM so its top-level forward returns per-position logprobs of given targets (1, T).

    DeepSpeed must run the top-level module's forward (ZeRO-3 resets its parameter-fetch state in that module's
    hooks; calling submodules directly silently dropped gradients under accumulation). The fused head reads the
    lm_head weight directly, so under ZeRO-3 the weight is registered as an external parameter of the wrapper
    (DeepSpeed then gathers it for the wrapper's forward and backward).
    """
    import torch

    class LogprobLM(torch.nn.Module):
        def __init__(self, lm: Any):
            super().__init__()
            self.lm = lm

        def forward(self, input_ids: Any, position_ids: Any, targets: Any) -> Any:
            return target_logprobs(self.lm, input_ids, position_ids, targets)

    wrapper = LogprobLM(model)
    if zero3:
        from deepspeed.runtime.zero.partition_parameters import register_external_parameter

        head = model.get_output_embeddings()
        register_external_parameter(wrapper, head.weight)
        if getattr(head, "bias", None) is not None:
            register_external_parameter(wrapper, head.bias)
    return wrapper


def packed_logprobs(model: Any, batch: Any, device: str = "cpu") -> Any:
    """log p(input_ids[t] | <t) as (1, T) for every token, 0.0 at each sample's first token (no engine needed)."""
    import torch

    b = batch.to(device)
    ids = b.input_ids
    targets = torch.cat([ids[:, 1:], torch.full_like(ids[:, :1], -1)], dim=1)
    lp = target_logprobs(model, ids, b.position_ids, targets)
    logp = torch.cat([torch.zeros_like(lp[:, :1]), lp[:, :-1]], dim=1)
    return logp * (b.position_ids > 0)


def target_logprobs(model: Any, input_ids: Any, position_ids: Any, targets: Any) -> Any:
    """log p(targets[t] | tokens <= t) for (1, T) rows; 0.0 where targets < 0 (no lm_head work there)."""
    # position_ids restarting at 0 separate the packed documents (packed_sdpa / flash-attn varlen read them);
    # use_cache=False keeps transformers from building a cache.
    hidden = model.base_model(input_ids=input_ids, position_ids=position_ids, use_cache=False).last_hidden_state
    head = model.get_output_embeddings()
    bias = getattr(head, "bias", None)
    return fused_logprobs(hidden[0], head.weight, bias, targets[0]).unsqueeze(0)


def fused_logprobs(hidden: Any, weight: Any, bias: Any, targets: Any, chunk: int = LOGIT_CHUNK) -> Any:
    """log softmax(hidden @ weight.T + bias)[t, targets[t]] as (T,) fp32, without keeping any logits.

    Rows with targets < 0 are skipped (0.0, zero gradient). The lm_head runs in chunks of `chunk` rows, in forward
    and again in backward, so fp32 logits of a 65k-token row never exist at once and nothing of them is saved.
    """

    return _FusedLogprob.apply(hidden, weight, bias, targets, chunk)


def _fused_logprob_fn() -> Any:
    import torch

    class FusedLogprob(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, hidden: Any, weight: Any, bias: Any, targets: Any, chunk: int) -> Any:
            rows = torch.nonzero(targets >= 0).flatten()
            out = torch.zeros(hidden.shape[0], dtype=torch.float32, device=hidden.device)
            for i in range(0, rows.numel(), chunk):
                r = rows[i : i + chunk]
                logits = _logits(hidden.index_select(0, r), weight, bias)  # (C, V) fp32
                tgt = targets.index_select(0, r)
                out[r] = logits.gather(1, tgt.unsqueeze(1)).squeeze(1) - torch.logsumexp(logits, dim=1)
            ctx.save_for_backward(hidden, weight, rows, targets)
            ctx.has_bias, ctx.chunk = bias is not None, chunk
            if bias is not None:
                ctx.bias = bias
            return out

        @staticmethod
        def backward(ctx: Any, grad_out: Any) -> Any:
            hidden, weight, rows, targets = ctx.saved_tensors
            bias = ctx.bias if ctx.has_bias else None
            g_hidden = torch.zeros_like(hidden)
            g_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device)
            g_bias = torch.zeros(weight.shape[0], dtype=torch.float32, device=weight.device) if ctx.has_bias else None
            for i in range(0, rows.numel(), ctx.chunk):
                r = rows[i : i + ctx.chunk]
                h = hidden.index_select(0, r)
                logits = _logits(h, weight, bias)
                g = grad_out.index_select(0, r).float()  # (C,)
                # d logp / d logits = onehot(target) - softmax
                d = torch.softmax(logits, dim=1).mul_(-g.unsqueeze(1))
                d[torch.arange(r.numel(), device=d.device), targets.index_select(0, r)] += g
                d_low = d.to(weight.dtype)
                g_hidden[r] = (d_low @ weight).to(hidden.dtype)
                if weight.dtype in (torch.bfloat16, torch.float16):
                    # the weight's matmul (fp32 accumulation inside), added to the fp32 sum per chunk: an fp32 GEMM
                    # runs at a tenth of bf16's rate on a GPU without TF32, and this is the head's largest one
                    g_weight += (d_low.t() @ h).float()
                else:
                    g_weight.addmm_(d.t(), h.float())
                if g_bias is not None:
                    g_bias += d.sum(0)
            g_b = g_bias.to(bias.dtype) if g_bias is not None and bias is not None else None
            return g_hidden, g_weight.to(weight.dtype), g_b, None, None

    return FusedLogprob


def _logits(h: Any, weight: Any, bias: Any) -> Any:
    logits = (h @ weight.t()).float()
    return logits + bias.float() if bias is not None else logits


class _LazyFn:
    """The autograd Function, built on first use (torch stays out of imports of this module)."""

    fn: Any = None

    def apply(self, *args: Any) -> Any:
        if self.fn is None:
            self.fn = _fused_logprob_fn()
        return self.fn.apply(*args)


_FusedLogprob = _LazyFn()
