"""The off-policy corrections (tis, mis, ipo) against a plain per-token Python loop, and their statistics."""

from __future__ import annotations

import math
from dataclasses import asdict

import pytest

from swerl_cli.training.dapo_config import DapoConfig
from swerl_cli.training.losses import LossInputs, create

torch = pytest.importorskip("torch")


def reference(kind, logp, old, infer, adv, mask, cfg, normalizer):
    """DAPO's per-token term times the correction weight, token by token with Python floats; plus the counts."""
    total, n, hit = 0.0, 0, 0
    ratios, diffs = [], []
    for b in range(len(logp)):
        for t in range(len(logp[b])):
            if not mask[b][t]:
                continue
            n += 1
            a = adv[b]
            rho = math.exp(logp[b][t] - old[b][t])
            term = min(rho * a, min(max(rho, 1 - cfg.eps_low), 1 + cfg.eps_high) * a)
            r = math.exp(old[b][t] - infer[b][t])
            ratios.append(r)
            if kind == "tis":
                w = min(r, cfg.is_cap)
                hit += r > cfg.is_cap
            elif kind == "mis":
                out = r > cfg.is_cap or r < cfg.is_floor
                w = 0.0 if out else r
                hit += out
            else:
                d = abs(math.exp(logp[b][t]) - math.exp(infer[b][t]))
                diffs.append(d)
                w = 0.0 if d > cfg.ipo_eps else 1.0
                hit += d > cfg.ipo_eps
            total += w * term
    return -total / normalizer, n, hit, ratios, diffs


def _case(seed, spread=1.0):
    g = torch.Generator().manual_seed(seed)
    b, t = 4, 16
    infer = -torch.rand(b, t, generator=g, dtype=torch.float64) * 2
    # pi_old / pi_infer in ~[0.37, 2.7]
    old = infer + (torch.rand(b, t, generator=g, dtype=torch.float64) - 0.5) * 2 * spread
    logp = old + (torch.rand(b, t, generator=g, dtype=torch.float64) - 0.5) * 0.8
    adv = torch.tensor([1.3, -0.7, 0.4, -2.0], dtype=torch.float64)
    mask = (torch.rand(b, t, generator=g) > 0.25).to(torch.float64)
    return logp, old, infer, adv, mask


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("kind", "hit_key"), [("tis", "is_capped"), ("mis", "is_masked"), ("ipo", "ipo_masked")])
def test_correction_matches_per_token_reference(kind, hit_key, seed):
    cfg = DapoConfig(loss=kind, is_cap=1.6, is_floor=0.6, ipo_eps=0.15)
    logp, old, infer, adv, mask = _case(seed)
    loss_obj = create(kind, **asdict(cfg))
    loss, stats = loss_obj(LossInputs(logp, mask, old, adv, infer), 50.0)
    ref, n, hit, ratios, diffs = reference(
        kind, logp.tolist(), old.tolist(), infer.tolist(), adv.tolist(), mask.tolist(), cfg, 50.0
    )
    assert loss.item() == pytest.approx(ref, rel=1e-12, abs=1e-12)
    assert stats["tokens"].item() == n
    assert 0 < stats[hit_key].item() == hit < n  # the case exercises the correction, and not on every token
    m = loss_obj.metrics({k: float(v) for k, v in stats.items()})
    if kind == "ipo":
        assert m["ipo_masked_frac"] == pytest.approx(hit / n)
        assert m["prob_diff_mean"] == pytest.approx(sum(diffs) / n)
        assert float(stats["prob_diff_max"]) == pytest.approx(max(diffs))
    else:
        assert m["is_ratio_mean"] == pytest.approx(sum(ratios) / n)
        assert float(stats["is_ratio_max"]) == pytest.approx(max(ratios))
        assert float(stats["is_ratio_min"]) == pytest.approx(min(ratios))
        frac = m["is_capped_frac"] if kind == "tis" else m["is_masked_frac"]
        assert frac == pytest.approx(hit / n)


@pytest.mark.parametrize("kind", ["tis", "mis", "ipo"])
def test_correction_is_the_paper_loss_when_sampler_and_trainer_agree(kind):
    # pi_infer == pi_old == pi_theta: every weight is 1, nothing is masked: exactly DAPO's value.
    cfg = DapoConfig(loss=kind)
    logp, _, _, adv, mask = _case(4)
    dapo, _ = create("dapo", **asdict(cfg))(LossInputs(logp, mask, logp.clone(), adv), None)
    corr, stats = create(kind, **asdict(cfg))(LossInputs(logp, mask, logp.clone(), adv, logp.clone()), None)
    assert corr.item() == dapo.item()
    assert sum(float(v) for k, v in stats.items() if k in ("is_capped", "is_masked", "ipo_masked")) == 0


@pytest.mark.parametrize("kind", ["tis", "mis", "ipo"])
def test_correction_weights_carry_no_gradient_and_masked_tokens_get_none(kind):
    cfg = DapoConfig(loss=kind, is_cap=1.6, is_floor=0.6, ipo_eps=0.15)
    logp, old, infer, adv, mask = _case(1)
    logp = logp.clone().requires_grad_(True)
    loss, _ = create(kind, **asdict(cfg))(LossInputs(logp, mask, old, adv, infer), 50.0)
    loss.backward()
    assert torch.all(logp.grad[mask == 0] == 0)
    # d loss / d logp on an unclipped token is -w * rho * A / N: the weight enters as a constant
    with torch.no_grad():
        rho = (logp - old).exp()
        r = (old - infer).exp()
        if kind == "tis":
            w = r.clamp(max=1.6)
        elif kind == "mis":
            w = torch.where((r > 1.6) | (r < 0.6), torch.zeros_like(r), r)
        else:
            w = ((logp.exp() - infer.exp()).abs() <= 0.15).to(r.dtype)
        a = adv.unsqueeze(-1).expand_as(rho)
        inside = (rho >= 0.8) & (rho <= 1.3) & (mask > 0)
        expect = -w * rho * a / 50.0
    torch.testing.assert_close(logp.grad[inside], expect[inside], rtol=1e-12, atol=1e-15)
    if kind != "tis":
        assert torch.all(logp.grad[(w == 0) & (mask > 0)] == 0)
