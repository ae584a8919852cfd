"""The contract every registered loss keeps, parametrized over the loss registry itself (a loss registered with
`register_loss` before collection is tested with no edit here): tiny CPU tensors, a few milliseconds each.

- the loss is a finite scalar; masked tokens get exactly zero gradient, trainable ones some;
- the stats it returns are the ones it declares (`stats`), and its `metrics` reads them;
- the normaliser is honoured: the loss scales as 1 / normalizer, and None means this call's masked tokens;
- its options are its own (`Options`, a LossOptions), and the stage config's flag of each option has the option's
  default (declared once, on the loss).
"""

from __future__ import annotations

import dataclasses

import pytest

from swerl_cli.training.dapo_config import DapoConfig
from swerl_cli.training.losses import STAGES, LossInputs, LossOptions, choices, create, loss_class
from swerl_cli.training.rft_config import RftConfig

torch = pytest.importorskip("torch")

CONFIGS = {"dapo": DapoConfig, "rft": RftConfig}
NAMES = choices()


def _inputs(requires_grad: bool = True) -> LossInputs:
    """3 rows x 8 tokens, float64; the first two tokens of every row and a few others masked; the policies close
    enough that no correction masks every token, far enough that the ratios are not all 1."""
    g = torch.Generator().manual_seed(7)
    infer = -torch.rand(3, 8, generator=g, dtype=torch.float64) * 2
    old = infer + (torch.rand(3, 8, generator=g, dtype=torch.float64) - 0.5) * 0.4
    logp = (old + (torch.rand(3, 8, generator=g, dtype=torch.float64) - 0.5) * 0.3).requires_grad_(requires_grad)
    mask = (torch.rand(3, 8, generator=g) > 0.3).to(torch.float64)
    mask[:, :2] = 0
    adv = torch.tensor([1.0, -0.5, 0.25], dtype=torch.float64)
    return LossInputs(logp, mask, old, adv, infer)


def test_the_registry_has_every_builtin_loss():
    assert {"dapo", "tis", "mis", "ipo", "sft"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_loss_is_registered_with_its_own_options(name):
    cls = loss_class(name)
    assert cls.name == name
    assert cls.stage in STAGES
    assert issubclass(cls.Options, LossOptions)
    assert dataclasses.is_dataclass(cls.Options)
    assert cls.stats, f"{name}: declare the stats every call returns"
    assert isinstance(create(name).options, cls.Options)


@pytest.mark.parametrize("name", NAMES)
def test_loss_is_finite_and_masked_tokens_get_no_gradient(name):
    x = _inputs()
    loss, _ = create(name)(x, 20.0)
    assert loss.dim() == 0
    assert torch.isfinite(loss)
    loss.backward()
    grad = x.logp.grad
    assert torch.all(grad[x.mask == 0] == 0)
    assert torch.any(grad[x.mask > 0] != 0)


@pytest.mark.parametrize("name", NAMES)
def test_loss_returns_the_stats_it_declares(name):
    loss_obj = create(name)
    _, stats = loss_obj(_inputs(), 20.0)
    assert set(stats) == set(loss_obj.stats)
    assert all(not getattr(v, "requires_grad", False) for v in stats.values()), "stats must be detached"
    fields = loss_obj.metrics({k: float(v) for k, v in stats.items()})
    assert isinstance(fields, dict)


@pytest.mark.parametrize("name", NAMES)
def test_loss_honours_the_normaliser(name):
    loss_obj = create(name)
    x = _inputs(requires_grad=False)
    at_10, _ = loss_obj(x, 10.0)
    at_20, _ = loss_obj(x, 20.0)
    assert at_10.item() != 0
    assert at_10.item() == pytest.approx(2 * at_20.item(), rel=1e-12)
    own, _ = loss_obj(x, None)  # None: the masked tokens of this call
    assert own.item() == pytest.approx(loss_obj(x, float(x.mask.sum()))[0].item(), rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_each_option_default_is_the_stage_config_flag_default(name):
    """A loss's options are the stage config's fields of the same name (`--is-cap` ...), and the config declares no
    second default: the flag's default is the option's."""
    cls = loss_class(name)
    config = {f.name: f for f in dataclasses.fields(CONFIGS[cls.stage])}
    for option in dataclasses.fields(cls.Options):
        assert option.name in config, f"{name}: option {option.name} is no field of {CONFIGS[cls.stage].__name__}"
        assert config[option.name].default == option.default, f"{name}: {option.name} has two defaults"


def test_a_config_value_reaches_the_loss():
    """The config's value of an option, not the option's default, is what the loss built from it reads."""
    from swerl_cli.training.losses import from_config

    cfg = DapoConfig(loss="mis", is_cap=1.25, is_floor=0.75, eps_low=0.1, old_logprobs="trainer")
    opts = from_config(cfg, "dapo").options
    assert (opts.is_cap, opts.is_floor, opts.eps_low, opts.eps_high) == (1.25, 0.75, 0.1, DapoConfig().eps_high)
