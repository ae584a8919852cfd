"""`gold` policy: applies the task's gold patch and submits, to validate environments end to end."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from swerl_cli.core.errors import PolicyError
from swerl_cli.policy import PolicyOptions
from swerl_cli.policy.base import Completion, EpisodeInfo, ScriptedBackend, identity

PATCH_PATH = "/tmp/.swerl/gold-$$.patch"  # $$: the sandbox shell's pid (local sandboxes share the host's /tmp)


@dataclass(frozen=True, slots=True)
class GoldOptions(PolicyOptions):
    """The gold policy has no options."""


class GoldPolicy(ScriptedBackend):
    """Turn 0 writes the gold patch into the sandbox and applies it with `git apply`; turn 1 submits."""

    name = "gold"
    Options = GoldOptions
    distributed = "ship"  # collect --ray: stateless: the driver's object is sent to every worker

    @classmethod
    def create(cls, options: GoldOptions) -> GoldPolicy:
        """Needs nothing."""
        return cls()

    def describe(self) -> dict[str, Any]:
        """The `policy` record fields."""
        return identity(self.name, self.name)

    def play(self, episode: EpisodeInfo, turn: int, tools: list[dict[str, Any]] | None) -> Completion:
        """Turn 0 applies the task's gold patch, every later turn submits."""
        patch = episode.task.get("patch")
        if not isinstance(patch, str) or not patch.strip():
            raise PolicyError(f"task {episode.instance_id} has no gold 'patch' to submit")
        if turn == 0:
            b64 = base64.b64encode(patch.encode()).decode()
            command = (
                f"mkdir -p /tmp/.swerl && echo {b64} | base64 -d > {PATCH_PATH} && git apply {PATCH_PATH} "
                f"&& rm -f {PATCH_PATH} && git status --short"
            )
            text = "I apply the reference patch of this task."
        else:
            command, text = "submit", "The patch is applied; submitting."
        return _action(text, command, tools)


def _action(text: str, command: str, tools: list[dict[str, Any]] | None) -> Completion:
    """A completion in the active action format (text fence or one native tool call)."""
    if tools:
        import json

        call = {
            "id": "call_0",
            "type": "function",
            "function": {"name": tools[0]["function"]["name"], "arguments": json.dumps({"command": command})},
        }
        return Completion(text=text, token_ids=[], logprobs=None, finish_reason="tool_calls", tool_calls=[call])
    return Completion(text=f"{text}\n```command\n{command}\n```", token_ids=[], logprobs=None)
