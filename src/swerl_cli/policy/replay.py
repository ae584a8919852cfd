"""`replay` policy: re-plays the assistant messages of recorded trajectories, turn by turn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swerl_cli.core.config import flag
from swerl_cli.core.errors import ConfigError, PolicyError
from swerl_cli.policy import PolicyOptions
from swerl_cli.policy.base import Completion, EpisodeInfo, ScriptedBackend, identity
from swerl_cli.streams.jsonl import read_records
from swerl_cli.streams.records import require


@dataclass(frozen=True, slots=True)
class ReplayOptions(PolicyOptions):
    """`--replay FILE`: the trajectory records to re-play."""

    replay: str | None = flag(None, "Trajectory file whose actions the replay policy re-plays.")

    def input_files(self) -> tuple[str, ...]:
        """The trajectory file, read as an input."""
        return (self.replay,) if self.replay else ()


class ReplayPolicy(ScriptedBackend):
    """Answers turn k of (instance_id, sample) with the k-th assistant message of the matching trajectory."""

    name = "replay"
    needs = "identity"
    Options = ReplayOptions
    distributed = "ship"  # collect --ray: the recorded actions travel with the job, so workers need not see the file

    @classmethod
    def create(cls, options: ReplayOptions) -> ReplayPolicy:
        """Reads the file now: a missing or bad one stops the run before any episode."""
        return cls(options.replay or "")

    def __init__(self, path: str):
        if not path:
            raise ConfigError("the replay policy needs --replay FILE (trajectory records to re-play)")
        self.path = path
        self._actions: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self._by_instance: dict[str, list[tuple[str, int]]] = {}
        for loc in read_records(path):
            iid = require(loc, "instance_id", str)
            sample = require(loc, "sample", int, optional=True) or 0
            messages = require(loc, "messages", list)
            self._actions[(iid, sample)] = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
            self._by_instance.setdefault(iid, []).append((iid, sample))

    def describe(self) -> dict[str, Any]:
        """The `policy` record fields."""
        return identity(self.name, f"replay:{self.path}")

    def _script(self, episode: EpisodeInfo) -> list[dict[str, Any]]:
        key = (episode.instance_id, episode.sample)
        if key in self._actions:
            return self._actions[key]
        keys = self._by_instance.get(episode.instance_id, [])
        if len(keys) == 1:
            return self._actions[keys[0]]
        raise PolicyError(f"{self.path}: no trajectory for {episode.instance_id} sample {episode.sample}")

    def play(self, episode: EpisodeInfo, turn: int, tools: list[dict[str, Any]] | None) -> Completion:
        """The recorded assistant message for this turn."""
        script = self._script(episode)
        if turn >= len(script):
            raise PolicyError(f"{self.path}: trajectory of {episode.instance_id} has only {len(script)} turns")
        msg = script[turn]
        calls = msg.get("tool_calls") or None
        return Completion(
            text=msg.get("content") or "",
            token_ids=[],
            logprobs=None,
            finish_reason="tool_calls" if calls else "stop",
            tool_calls=calls,
        )
