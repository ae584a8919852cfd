"""Policies behind one protocol; BACKENDS (short name -> import path) is the only registry.

Each backend class builds itself from the collect config (`from_config(cfg)`), so adding a backend is one
registry line plus its class: nothing else branches on backend names.
"""

from __future__ import annotations

import importlib
from typing import Any

from swerl_cli.core.errors import ConfigError

BACKENDS: dict[str, str] = {
    "openai": "swerl_cli.policy.openai:OpenAIPolicy",
    "hf": "swerl_cli.policy.hf:HFPolicy",
    "vllm": "swerl_cli.policy.vllm:VLLMPolicy",
    "gold": "swerl_cli.policy.gold:GoldPolicy",
    "gold-steps": "swerl_cli.policy.gold_steps:GoldStepsPolicy",
    "replay": "swerl_cli.policy.replay:ReplayPolicy",
}


def policy_class(name: str) -> Any:
    """Import the class registered under `name` (lazily, so heavy backends load only when chosen)."""
    if name not in BACKENDS:
        raise ConfigError(f"unknown policy {name!r}; choose one of {', '.join(BACKENDS)}")
    module, _, attr = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def build_policy(cfg: Any) -> Any:
    """Instantiate the backend `cfg.policy` names from the config (heavy backends import their libraries lazily).

    A local `--model` of the hf and vllm backends is checked here, once, before any episode (model_dir.py: the
    rule rft and dapo use): an empty or corrupt directory is one line and exit 3, not an error record per episode.
    """
    if cfg.policy in ("hf", "vllm") and getattr(cfg, "model", None):
        from swerl_cli.core.model_dir import check_model_dir

        check_model_dir(cfg.model)
    return policy_class(cfg.policy).from_config(cfg)
