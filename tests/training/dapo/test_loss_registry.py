"""The loss registry: names, config validation, and the default losses bit-identical to the pre-registry code.

The golden values below were produced by the pre-registry code (dapo.py's `_loss_fn` and rft.py's `sft_loss`,
commit f8accaa) on the packed batch `_case()` builds: loss and every token's gradient, as exact float hex.
"""

from __future__ import annotations

import random

import pytest

from swerl_cli.core.errors import ConfigError
from swerl_cli.training.dapo_config import DapoConfig
from swerl_cli.training.losses import (
    LOSSES,
    Loss,
    LossInputs,
    check_loss,
    choices,
    create,
    from_config,
    loss_class,
    register_loss,
)
from swerl_cli.training.rft_config import RftConfig

torch = pytest.importorskip("torch")

DAPO_LOSS = "-0x1.31fed00000000p-2"
DAPO_GRAD = (
    "0x0.0p+0 0x0.0p+0 0x0.0p+0 0x0.0p+0 0x0.0p+0 -0x1.7c3eea0000000p-5 -0x1.92ab1c0000000p-5 0x0.0p+0 "
    "-0x1.580a860000000p-5 0x0.0p+0 0x0.0p+0 0x0.0p+0 0x0.0p+0 0x1.b590920000000p-5 0x0.0p+0 0x0.0p+0 "
    "0x1.41d1280000000p-4 0x1.b0c5540000000p-5 0x0.0p+0 0x1.2b2afa0000000p-4 0x1.bb12d00000000p-5 0x0.0p+0 0x0.0p+0 "
    "0x0.0p+0 0x0.0p+0 0x0.0p+0 -0x1.f1f2040000000p-6 -0x1.2ad0000000000p-5 -0x1.6afbb60000000p-6 "
    "-0x1.a698740000000p-6 -0x1.42cf340000000p-6 0x0.0p+0 -0x1.16db700000000p-6 -0x1.db3a580000000p-6 0x0.0p+0 0x0.0p+0"
).split()
DAPO_STATS = {"tokens": 22.0, "ratio_sum": 23.915874481201172, "clip_low": 2.0, "clip_high": 5.0}
SFT_LOSS = "0x1.7564840000000p+0"
SFT_GRAD_HEAD = ["-0x0.0p+0"] * 3 + ["-0x1.e1e1e20000000p-5"] * 5


def _case():
    from swerl_cli.training.batching import collate
    from swerl_cli.training.data import Sample

    rng = random.Random(11)
    samples = []
    for k, adv in enumerate([1.25, -0.75, 0.5]):
        n = 9 + 3 * k
        mask = [0] * 3 + [int(rng.random() > 0.2) for _ in range(n - 3)]
        lps = [-rng.random() * 3 for _ in range(n)]
        s = Sample(f"s{k}", "x", k + 1, [rng.randrange(5, 100) for _ in range(n)], mask, lps, True)
        s.advantage = adv
        samples.append(s)
    batch = collate(samples)
    g = torch.Generator().manual_seed(5)
    logp = (batch.old_logprobs + (torch.rand(batch.old_logprobs.shape, generator=g) - 0.5) * 1.2).requires_grad_(True)
    return batch, logp


def test_default_dapo_loss_is_bit_identical_to_the_pre_registry_loss():
    from swerl_cli.training.dapo_loss import batch_loss

    cfg = DapoConfig()
    assert cfg.loss == "dapo"
    batch, logp = _case()
    extremes: dict = {}
    loss, stats = batch_loss(from_config(cfg, "dapo"), 17.0, extremes)(logp, batch)
    loss.backward()
    assert loss.item().hex() == DAPO_LOSS
    assert [x.hex() for x in logp.grad[0].tolist()] == DAPO_GRAD
    assert {k: stats[k] for k in DAPO_STATS} == DAPO_STATS
    assert extremes["ratio_max"]
    assert extremes["ratio_min"]


def test_default_sft_loss_is_bit_identical_to_the_pre_registry_loss():
    from swerl_cli.training.rft import rft_loss_fn

    assert RftConfig(model="m", output="o").loss == "sft"
    batch, logp = _case()
    loss, stats = rft_loss_fn(create("sft"), 17.0)(logp, batch)
    loss.backward()
    assert loss.item().hex() == SFT_LOSS
    assert [x.hex() for x in logp.grad[0].tolist()][:8] == SFT_GRAD_HEAD
    assert stats == {"nll_sum": pytest.approx(24.795604705810547, abs=0), "trainable_tokens": 22.0, "tokens": 36.0}


class HalfNll(Loss):
    """A loss from outside the package: half the masked NLL."""

    name, stage = "test-half-nll", "rft"
    stats = ("nll_sum", "trainable_tokens")

    def __call__(self, x: LossInputs, normalizer: float | None) -> tuple:
        nll = -(x.logp * x.mask).sum()
        return 0.5 * nll / normalizer, {"nll_sum": nll.detach(), "trainable_tokens": x.mask.sum()}


def test_a_loss_added_from_outside_the_package_is_selected_by_the_config_field():
    """docs/architecture.md "where to add" a loss: one `Loss` class, registered as "module:Class"; `loss: <name>`
    selects it and rft's engine loss_fn runs it (here: half the masked NLL, against the registered `sft`)."""
    from swerl_cli.training.rft import rft_loss_fn

    register_loss("test-half-nll", f"{__name__}:HalfNll")
    try:
        cfg = RftConfig(model="m", output="o", loss="test-half-nll")
        assert "test-half-nll" in choices("rft")
        batch, logp = _case()
        half, stats = rft_loss_fn(from_config(cfg, "rft"), 17.0)(logp, batch)
        full, _ = rft_loss_fn(create("sft"), 17.0)(logp, batch)
        assert half.item() == pytest.approx(full.item() / 2, rel=1e-6)
        assert stats["tokens"] == 36.0
    finally:
        LOSSES.pop("test-half-nll")
    with pytest.raises(ConfigError, match="unknown loss 'test-half-nll'"):
        RftConfig(model="m", output="o", loss="test-half-nll")


def test_registry_names_by_stage():
    assert choices("dapo") == ["dapo", "ipo", "mis", "tis"]
    assert choices("rft") == ["sft"]
    assert choices() == ["dapo", "ipo", "mis", "sft", "tis"]
    assert {loss_class(n).needs_sampler_logprobs for n in ("tis", "mis", "ipo")} == {True}
    assert loss_class("dapo").needs_sampler_logprobs is False
    with pytest.raises(ConfigError, match="unknown loss 'ppo'; choose one of dapo, ipo, mis, sft, tis"):
        create("ppo")


def test_create_reads_each_loss_its_own_options_by_name():
    """`create(name, **options)`: the loss takes the options its Options declares and ignores the others."""
    mis = create("mis", is_cap=3.0, is_floor=0.25, ipo_eps=0.9, lr=1.0)
    assert (mis.options.is_cap, mis.options.is_floor, mis.options.eps_low) == (3.0, 0.25, 0.2)
    assert not hasattr(mis.options, "ipo_eps")
    assert create("ipo", ipo_eps=0.1, is_cap=None).options.ipo_eps == 0.1
    assert not hasattr(create("tis").options, "is_floor")
    cfg = DapoConfig(loss="tis", is_cap=1.5, eps_high=0.4, old_logprobs="trainer")
    assert from_config(cfg, "dapo").options == loss_class("tis").Options(eps_high=0.4, is_cap=1.5)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"loss": "ppo"}, "loss"),
        ({"loss": "sft"}, "loss"),  # an rft loss is not a dapo loss
        ({"is_cap": 0.9}, "is_cap"),
        ({"is_floor": 1.5}, "is_floor"),
        ({"ipo_eps": 0.0}, "ipo_eps"),
        ({"loss": "tis", "old_logprobs": "sampler"}, "loss"),
    ],
)
def test_dapo_config_refuses_bad_loss_settings(kwargs, field):
    with pytest.raises(ConfigError, match=f"dapo config: field '{field}'"):
        DapoConfig(**kwargs)


def test_rft_config_refuses_a_dapo_loss():
    with pytest.raises(ConfigError, match="rft config: field 'loss': unknown loss 'dapo'; choose one of sft"):
        RftConfig(model="m", output="o", loss="dapo")
    check_loss("ipo", "dapo")  # no error
