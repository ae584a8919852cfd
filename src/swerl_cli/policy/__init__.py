"""Policies behind one protocol; BACKENDS (short name -> "module:Class") is the only registry of backends.

Each backend is a `PolicyBackend` (base.py) with its own typed `Options`, built from the user's flags by name
(`create(name, **options)`; `choices()` lists the names), so adding one is its module plus one registry line (or
`register_policy` from outside the package): nothing else branches on backend names.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from swerl_cli.core.config import FLAG
from swerl_cli.core.plugins import Registry
from swerl_cli.policy.base import PolicyBackend, PolicyOptions

BACKENDS = Registry(
    {
        "openai": "swerl_cli.policy.openai:OpenAIPolicy",
        "hf": "swerl_cli.policy.hf:HFPolicy",
        "vllm": "swerl_cli.policy.vllm:VLLMPolicy",
        "gold": "swerl_cli.policy.gold:GoldPolicy",
        "gold-steps": "swerl_cli.policy.gold_steps:GoldStepsPolicy",
        "replay": "swerl_cli.policy.replay:ReplayPolicy",
    },
    unknown="unknown policy {name!r}; choose one of {choices}",
)
register_policy = BACKENDS.register  # add (or replace) a backend as `"module:Class"` (a PolicyBackend subclass)
DEFAULT_POLICY = "openai"
BUILTIN = tuple(BACKENDS)
OPTION = "swerl.policy_option"  # the metadata key that marks a command config's field as a policy option

__all__ = [
    "BACKENDS",
    "DEFAULT_POLICY",
    "PolicyBackend",
    "PolicyOptions",
    "choices",
    "create",
    "option_field",
    "register_policy",
]


def choices() -> list[str]:
    """The registered backends, in registration order."""
    return BACKENDS.choices()


def create(name: str, **options: Any) -> PolicyBackend:
    """The backend `name`, configured by its own options read from `options` (the user's flags, by name).

    The backend checks what it can before any episode (hf and vllm: a local `--model` directory, by the rule rft
    and dapo use; an optional package): a bad setting is one line and exit 3, not an error record per episode.
    """
    backend: PolicyBackend = BACKENDS.create(name, **options)
    return backend


def option_field(name: str) -> Any:
    """A command config's field for the policy option `name`, as the built-in backends declare it: their default and,
    where one declares it as a flag, its help (`core.config.flag`), so the command declares neither again
    (`collect/config.py`: `model: str | None = option_field("model")`). Every backend with the option declares the
    same default (tests/collect/test_policy_options.py compares them)."""
    found = [f for n in BUILTIN for f in dataclasses.fields(BACKENDS.cls(n).Options) if f.name == name]
    if not found:
        raise KeyError(f"no built-in policy backend has an option {name!r}")
    declared = next((f for f in found if FLAG in f.metadata), found[0])
    return dataclasses.field(default=declared.default, metadata={**declared.metadata, OPTION: True})
