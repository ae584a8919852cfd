"""The DAPO loss against a plain per-token Python loop, and its gradients on masked tokens and dropped groups."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from swerl_cli.training.losses import dapo_policy_loss, token_logprobs  # noqa: E402


def reference_loss(logp, old, adv, mask, eps_low, eps_high, normalizer=None):
    """Eq. 8 written token by token with Python floats: -(1/N) sum min(rho A, clip(rho) A)."""
    total, n, low, high = 0.0, 0, 0, 0
    for b in range(len(logp)):
        for t in range(len(logp[b])):
            if not mask[b][t]:
                continue
            a = adv[b] if not isinstance(adv[b], list) else adv[b][t]
            rho = math.exp(logp[b][t] - old[b][t])
            clipped_rho = min(max(rho, 1 - eps_low), 1 + eps_high)
            total += min(rho * a, clipped_rho * a)
            n += 1
            low += int(rho < 1 - eps_low and a < 0)
            high += int(rho > 1 + eps_high and a > 0)
    return -total / (normalizer if normalizer is not None else n), n, low, high


def random_case(seed, b=4, t=12, spread=0.6):
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(b, t, generator=g, dtype=torch.float64) * 3
    logp = old + (torch.rand(b, t, generator=g, dtype=torch.float64) - 0.5) * 2 * spread  # ratios in ~[0.55, 1.8]
    adv = torch.tensor([1.3, -0.7, 0.4, -2.0][:b], dtype=torch.float64)
    mask = (torch.rand(b, t, generator=g) > 0.3).to(torch.float64)
    return logp, old, adv, mask


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("eps_low", "eps_high"), [(0.2, 0.3), (0.2, 0.26), (0.1, 0.1)])
def test_dapo_loss_matches_per_token_reference(seed, eps_low, eps_high):
    logp, old, adv, mask = random_case(seed)
    loss, stats = dapo_policy_loss(logp, old, adv, mask, eps_low, eps_high)
    ref, n, low, high = reference_loss(logp.tolist(), old.tolist(), adv.tolist(), mask.tolist(), eps_low, eps_high)
    assert loss.item() == pytest.approx(ref, rel=1e-12, abs=1e-12)
    assert stats["tokens"].item() == n
    # The random case must exercise both clip sides, else the comparison proves less than it claims.
    assert low > 0
    assert high > 0
    assert stats["clip_low"].item() == low
    assert stats["clip_high"].item() == high


def test_dapo_loss_explicit_normalizer_and_per_token_advantages():
    logp, old, adv, mask = random_case(5)
    per_token = adv.unsqueeze(-1).expand_as(logp).clone()
    per_token[:, ::2] *= -1  # mixed signs within a row, as in a packed row of several sequences
    loss, _ = dapo_policy_loss(logp, old, per_token, mask, 0.2, 0.3, normalizer=1000.0)
    ref, *_ = reference_loss(logp.tolist(), old.tolist(), per_token.tolist(), mask.tolist(), 0.2, 0.3, 1000.0)
    assert loss.item() == pytest.approx(ref, rel=1e-12)


def test_dapo_loss_unclipped_on_policy_is_minus_mean_advantage_per_token():
    # At rho == 1 nothing is clipped and the loss is -(sum over tokens of A) / N.
    old = torch.full((2, 3), -1.0, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.float64)
    adv = torch.tensor([2.0, -1.0], dtype=torch.float64)
    loss, stats = dapo_policy_loss(old.clone(), old, adv, mask, 0.2, 0.3)
    assert loss.item() == pytest.approx(-(2.0 + 2.0 - 1.0) / 3)
    assert stats["clip_low"].item() == 0
    assert stats["clip_high"].item() == 0


def test_dapo_clip_sides_give_zero_gradient_only_where_clipped():
    # Token 0: A>0, rho=1.5 > 1.3 -> clipped (no grad). Token 1: A>0, rho=0.5 -> unclipped (min picks rho*A).
    # Token 2: A<0, rho=0.5 < 0.8 -> clipped (no grad). Token 3: A<0, rho=1.5 -> unclipped.
    old = torch.zeros(4, 1, dtype=torch.float64)
    logp = torch.log(torch.tensor([[1.5], [0.5], [0.5], [1.5]], dtype=torch.float64)).requires_grad_(True)
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0], dtype=torch.float64)
    loss, stats = dapo_policy_loss(logp, old, adv, torch.ones(4, 1), 0.2, 0.3)
    loss.backward()
    g = logp.grad.squeeze(-1).tolist()
    assert g[0] == 0.0
    assert g[2] == 0.0
    # d/dlogp of -(rho*A)/N = -rho*A/N
    assert g[1] == pytest.approx(-0.5 * 1.0 / 4)
    assert g[3] == pytest.approx(-1.5 * -1.0 / 4)
    assert stats["clip_high"].item() == 1
    assert stats["clip_low"].item() == 1


def test_dapo_zero_gradient_on_masked_tokens_and_zero_advantage_rows():
    logp, old, adv, mask = random_case(3)
    adv[1] = 0.0  # a dropped group contributes nothing even if it were fed in
    logp = logp.clone().requires_grad_(True)
    loss, _ = dapo_policy_loss(logp, old, adv, mask, 0.2, 0.3)
    loss.backward()
    assert torch.all(logp.grad[mask == 0] == 0)
    assert torch.all(logp.grad[1] == 0)
    assert torch.any(logp.grad[0] != 0)


def test_token_logprobs_equals_log_softmax_gather():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 7, generator=g)
    targets = torch.randint(0, 7, (2, 5), generator=g)
    out = token_logprobs(logits, targets)
    for b in range(2):
        for t in range(5):
            row = logits[b, t].double()
            expect = row[targets[b, t]] - torch.logsumexp(row, 0)
            assert out[b, t].item() == pytest.approx(expect.item(), abs=1e-5)
