"""Policies behind one protocol; BACKENDS (short name -> "module:Class") is the only registry of backends.

Each backend is a `PolicyBackend` (base.py) with its own typed `Options`, built from the user's flags by name
(`create(name, **options)`; `choices()` lists the names), so adding one is its module plus one registry line (or
`register_policy` from outside the package): nothing else branches on backend names.
"""

from __future__ import annotations

from typing import Any

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

__all__ = [
    "BACKENDS",
    "DEFAULT_POLICY",
    "PolicyBackend",
    "PolicyOptions",
    "choices",
    "create",
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
