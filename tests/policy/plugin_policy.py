"""A policy backend defined outside swerl (tests/policy/test_policy_registry.py registers it as `scripted` and
collects with it): the two files "where to add a policy" touches are this module and one registration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swerl_cli.policy import PolicyOptions
from swerl_cli.policy.base import Completion, EpisodeInfo, ScriptedBackend


@dataclass(frozen=True, slots=True)
class ScriptedOptions(PolicyOptions):
    """Read from collect's flags by name: `--model` names the script's first command, `--policy-version` is kept."""

    model: str | None = None
    policy_version: str | None = None


class ScriptedPolicy(ScriptedBackend):
    """Turn 0 runs the command `--model` names (default `git status --short`), turn 1 submits."""

    name = "scripted"
    Options = ScriptedOptions
    distributed = "ship"

    def __init__(self, command: str, version: str):
        self.command, self.version = command, version

    @classmethod
    def create(cls, options: ScriptedOptions) -> ScriptedPolicy:
        return cls(options.model or "git status --short", options.policy_version or "scripted-0")

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.command, "version": self.version}

    def play(self, episode: EpisodeInfo, turn: int, tools: list[dict[str, Any]] | None) -> Completion:
        command = self.command if turn == 0 else "submit"
        return Completion(text=f"Step {turn}.\n```command\n{command}\n```", token_ids=[], logprobs=None)
