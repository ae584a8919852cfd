"""The contract every registered policy backend keeps, parametrized over the policy registry itself (a backend
registered before collection is tested with no edit here, tests/contracts.py); no model, no server, no sandbox.

- it is a `PolicyBackend` registered under its own name, with its own frozen `Options` (a `PolicyOptions`), every
  option with one default, and a cluster mode `collect --ray` understands;
- built from its defaults it is a working backend whose `describe()` names it, or it refuses in one line (a
  missing `--model`, `--base-url`, `--replay` or optional package), before any episode;
- its options are read by name (foreign ones ignored), and a config section that names an option it does not
  have is refused in one line naming it.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from swerl_cli.core.errors import ConfigError, SwerlError
from swerl_cli.policy import BACKENDS, PolicyBackend, PolicyOptions, choices, create
from tests.contracts import check_options, one_line

NAMES = choices()


def test_the_registry_has_every_builtin_backend():
    assert {"openai", "hf", "vllm", "gold", "gold-steps", "replay"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_backend_is_registered_with_its_own_options(name):
    cls = BACKENDS.cls(name)
    assert issubclass(cls, PolicyBackend)
    assert cls.name == name
    check_options(cls.Options, PolicyOptions)
    assert cls.distributed in (None, "ship", "rebuild")


@pytest.mark.parametrize("name", NAMES)
def test_backend_builds_from_its_defaults_or_refuses_in_one_line(name):
    try:
        policy = create(name)
    except SwerlError as e:
        refusal = one_line(e)
    else:
        refusal = None
    if refusal is not None:
        assert "--" in refusal, f"{name}: a refusal names the flag that is missing: {refusal}"
        return
    try:
        assert isinstance(policy, BACKENDS.cls(name))
        assert policy.describe()["backend"] == name
    finally:
        asyncio.run(policy.aclose())


@pytest.mark.parametrize("name", NAMES)
def test_backend_reads_its_options_by_name_and_ignores_foreign_ones(name):
    options = BACKENDS.cls(name).Options
    defaults = options()
    assert options.from_options(no_such_flag=1, sandbox="docker") == defaults
    assert options.from_options(**{f.name: None for f in dataclasses.fields(options)}) == defaults  # None: not given


@pytest.mark.parametrize("name", NAMES)
def test_an_unknown_option_in_a_config_section_is_one_line(name):
    with pytest.raises(ConfigError) as info:
        BACKENDS.cls(name).Options.from_section({"no_such_option": 1}, f"policy {name}")
    assert "no_such_option" in one_line(info.value)
    assert one_line(info.value).startswith(f"policy {name}: ")


def test_an_unknown_backend_is_one_line_naming_the_choices():
    with pytest.raises(ConfigError) as info:
        create("no-such-policy")
    assert one_line(info.value) == f"unknown policy 'no-such-policy'; choose one of {', '.join(choices())}"
