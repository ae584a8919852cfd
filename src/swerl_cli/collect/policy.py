"""The one place collect turns its config into a policy: `--policy NAME` picks the backend from the registry
(`swerl_cli.policy.BACKENDS`), built from its own options, which the config already holds (`cfg.policy_options`)."""

from __future__ import annotations

import zlib

from swerl_cli.collect.config import CollectConfig
from swerl_cli.core.errors import ConfigError
from swerl_cli.policy import BACKENDS, PolicyBackend


def build_policy(cfg: CollectConfig) -> PolicyBackend:
    """The backend `cfg.policy` names, built from `cfg.policy_options` and checked before any episode."""
    backend: PolicyBackend = BACKENDS.cls(cfg.policy).create(cfg.policy_options)
    return backend


def episode_policy(cfg: CollectConfig, instance_id: str, sample: int) -> PolicyBackend:
    """A policy built for one episode on a cluster worker; episodes start their round robin over several endpoints
    at different ones."""
    policy = build_policy(cfg)
    policy.spread(zlib.crc32(f"{instance_id}/{sample}".encode()))
    return policy


def check_distributable(cfg: CollectConfig) -> str:
    """How the configured policy reaches workers (`ship` or `rebuild`); a one-line ConfigError if it cannot."""
    mode = BACKENDS.cls(cfg.policy).distributed
    if mode not in ("ship", "rebuild"):
        raise ConfigError(
            f"--policy {cfg.policy} runs the model inside this process and cannot run on a Ray cluster; serve the "
            "model (e.g. vLLM's OpenAI server) and use --policy openai --base-url URL"
        )
    return mode
