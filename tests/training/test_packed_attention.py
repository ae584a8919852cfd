"""Per-document attention on packed rows and the fused chunked logprob head, in process on the tiny model."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.train


def test_document_bounds_split_at_every_position_restart() -> None:
    import torch

    from swerl_cli.training.attention import document_bounds

    assert document_bounds(torch.tensor([[0, 1, 2, 0, 1, 0]])) == [(0, 3), (3, 5), (5, 6)]
    assert document_bounds(torch.tensor([[0, 1, 2, 3]])) == [(0, 4)]
    # a slice of a longer document (sequence parallelism hands a rank such positions) is one document
    assert document_bounds(torch.tensor([[7, 8, 9, 0, 1]])) == [(0, 3), (3, 5)]


@pytest.fixture(scope="module")
def models(tiny_model: Path) -> dict:
    from transformers import AutoModelForCausalLM

    from swerl_cli.training import attention

    attention.register()
    return {
        impl: AutoModelForCausalLM.from_pretrained(tiny_model, attn_implementation=impl).eval()
        for impl in ("packed_sdpa", "sdpa")
    }


def _row(lengths: list[int], seed: int = 0):
    import torch

    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 1000, (1, sum(lengths)), generator=g)
    pos = torch.cat([torch.arange(n) for n in lengths]).unsqueeze(0)
    return ids, pos


def test_packed_sdpa_equals_each_document_alone_and_never_looks_across(models: dict) -> None:
    import torch

    lengths = [7, 1, 12, 5]
    ids, pos = _row(lengths)
    model = models["packed_sdpa"]
    with torch.no_grad():
        packed = model.model(input_ids=ids, position_ids=pos, use_cache=False).last_hidden_state
        alone, start = [], 0
        for n in lengths:
            alone.append(model.model(input_ids=ids[:, start : start + n], use_cache=False).last_hidden_state)
            start += n
        torch.testing.assert_close(packed, torch.cat(alone, dim=1), rtol=1e-5, atol=1e-5)
        # the dense block-mask path (transformers' sdpa) agrees: same attention, T^2 work
        dense = models["sdpa"].model(input_ids=ids, position_ids=pos, use_cache=False).last_hidden_state
        torch.testing.assert_close(packed, dense, rtol=1e-4, atol=1e-4)
        # changing the first document changes nothing in the others
        other = ids.clone()
        other[0, :7] = torch.randint(5, 1000, (7,))
        moved = model.model(input_ids=other, position_ids=pos, use_cache=False).last_hidden_state
    assert not torch.allclose(moved[0, :7], packed[0, :7])
    torch.testing.assert_close(moved[0, 7:], packed[0, 7:], rtol=0, atol=0)


def test_fused_logprobs_match_log_softmax_and_its_gradients() -> None:
    import torch

    from swerl_cli.training.logprobs import fused_logprobs

    g = torch.Generator().manual_seed(3)
    h = torch.randn(37, 16, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(50, 16, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(50, generator=g, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 50, (37,), generator=g)
    targets[[0, 5, 36]] = -1  # skipped rows: 0.0 and no gradient
    upstream = torch.randn(37, generator=g, dtype=torch.float64)

    out = fused_logprobs(h, w, b, targets, chunk=8)  # several chunks and a ragged last one
    (out.double() * upstream).sum().backward()
    grads = [x.grad.clone() for x in (h, w, b)]
    for x in (h, w, b):
        x.grad = None
    keep = targets >= 0
    ref = torch.log_softmax(h @ w.t() + b, dim=1).gather(1, targets.clamp(min=0).unsqueeze(1)).squeeze(1) * keep
    (ref * upstream).sum().backward()
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-6)
    assert out[0] == 0.0
    assert out[36] == 0.0
    for got, x in zip(grads, (h, w, b), strict=True):
        torch.testing.assert_close(got.double(), x.grad, rtol=1e-5, atol=1e-6)
    assert torch.all(grads[0][~keep] == 0)


def test_fused_logprobs_bf16_weight_gradient_matches_fp64_within_bf16_rounding() -> None:
    """A bf16 head's weight gradient is summed chunk by chunk in fp32 from bf16 matmuls (the GPU path): it equals
    the fp64 gradient to bf16 precision, and the summation over chunks adds no error that grows with the row."""
    import torch

    from swerl_cli.training.logprobs import fused_logprobs

    g = torch.Generator().manual_seed(4)
    h64 = torch.randn(96, 32, generator=g, dtype=torch.float64)
    w64 = torch.randn(80, 32, generator=g, dtype=torch.float64) * 0.2
    targets = torch.randint(0, 80, (96,), generator=g)
    upstream = torch.randn(96, generator=g, dtype=torch.float64)
    h = h64.to(torch.bfloat16).requires_grad_()
    w = w64.to(torch.bfloat16).requires_grad_()
    (fused_logprobs(h, w, None, targets, chunk=8).double() * upstream).sum().backward()
    hr, wr = h.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    ref = torch.log_softmax(hr @ wr.t(), dim=1).gather(1, targets.unsqueeze(1)).squeeze(1)
    (ref * upstream).sum().backward()
    assert w.grad is not None
    assert w.grad.dtype == torch.bfloat16
    err = (w.grad.double() - wr.grad).abs().max() / wr.grad.abs().max()
    assert err < 2e-2, err


def test_engine_logprobs_are_computed_only_on_trainable_tokens(models: dict) -> None:
    import torch

    from swerl_cli.training.batching import PackedBatch
    from swerl_cli.training.logprobs import packed_logprobs, target_logprobs

    ids, pos = _row([9, 6])
    model = models["packed_sdpa"]
    with torch.no_grad():
        zeros = torch.zeros_like(ids)
        full = packed_logprobs(model, PackedBatch(ids, pos, torch.ones_like(ids).float(), zeros.float(), zeros))
        reference = torch.log_softmax(model(input_ids=ids[:, :9], use_cache=False).logits[0, :-1], dim=-1)
        torch.testing.assert_close(full[0, 1:9], reference.gather(1, ids[0, 1:9, None]).squeeze(1))
        assert full[0, 0] == 0.0
        assert full[0, 9] == 0.0
        targets = torch.full_like(ids, -1)
        targets[0, 3] = ids[0, 4]
        sparse = target_logprobs(model, ids, pos, targets)
    assert sparse[0, 3] == pytest.approx(float(full[0, 4]), abs=1e-5)
    assert int((sparse != 0).sum()) == 1
