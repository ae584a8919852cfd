"""SWE-agent `.traj` files: the legacy history form and the function-calling form (tool calls, tool call ids).

A `.traj` is one JSON object: `history` (the model's context as chat messages with `agent`, `message_type`,
`thought`, `action`, `tool_calls`, `tool_call_ids`), `trajectory` (steps), `info` (`exit_status`, `submission`,
`model_stats`) and `replay_config` (SWE-agent 1.x: the run's `RunSingleConfig` as a JSON string, whose
`problem_statement.id` is the instance id and `agent.model.name` the model). The instance id comes from
`replay_config`, else `info.instance_id`, else the file name (`{instance_id}.traj`, as 0.x wrote it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swerl_cli.convert.base import Converter
from swerl_cli.convert.common import message, normalise_calls, text_of, trajectory_fields
from swerl_cli.core.errors import InputError
from swerl_cli.streams.records import dict_at

NAME = "swe-agent"


def _replay_config(obj: dict[str, Any]) -> dict[str, Any]:
    """`replay_config` parsed (a JSON string in 1.x files, an object in some), `{}` when absent or unreadable."""
    cfg = obj.get("replay_config")
    if isinstance(cfg, str):
        try:
            cfg = json.loads(cfg)
        except json.JSONDecodeError:
            return {}
    return cfg if isinstance(cfg, dict) else {}


def _model(cfg: dict[str, Any]) -> str | None:
    model = dict_at(dict_at(cfg, "agent"), "model").get("name")
    return model if isinstance(model, str) else None


class SweAgent(Converter):
    """SWE-agent `.traj` files (one JSON object each)."""

    name = NAME
    whole_file = True
    document_suffixes = (".traj",)
    detect_rank = 10  # before mini-swe-agent: its files have `info` too

    @classmethod
    def matches(cls, obj: Any) -> bool:
        """A JSON object with SWE-agent's `history` list and `info` object."""
        return isinstance(obj, dict) and isinstance(obj.get("history"), list) and isinstance(obj.get("info"), dict)

    def convert(self, obj: Any, path: str, line: int | None) -> dict[str, Any]:
        """One `.traj` object -> one trajectory record."""
        if not self.matches(obj):
            raise InputError(path, line, "history", "missing: not a SWE-agent .traj (needs 'history' and 'info')")
        messages: list[dict[str, Any]] = []
        for i, h in enumerate(obj["history"]):
            if not isinstance(h, dict) or h.get("role") not in ("system", "user", "assistant", "tool"):
                raise InputError(path, line, f"history[{i}].role", "missing or not system/user/assistant/tool")
            if h.get("is_demo"):
                continue  # demonstrations are folded into the prompt by SWE-agent's templates; not the model's turns
            role = h["role"]
            if role == "assistant":
                calls = normalise_calls(h.get("tool_calls"), f"call_{i}")
                msg = message("assistant", h.get("content"), tool_calls=calls or None)
                if not calls and isinstance(h.get("action"), str):
                    msg["_action"], msg["_thought"] = h["action"], text_of(h.get("thought"))
                messages.append(msg)
            elif role == "tool":
                ids = h.get("tool_call_ids") or ([h["tool_call_id"]] if h.get("tool_call_id") else [])
                if not ids:
                    raise InputError(path, line, f"history[{i}].tool_call_ids", "missing on a tool message")
                messages.extend(message("tool", h.get("content"), tool_call_id=str(t)) for t in ids)
            else:
                messages.append(message(role, h.get("content")))
        info = obj["info"]
        ms = dict_at(info, "model_stats")
        cfg = _replay_config(obj)
        return trajectory_fields(
            instance_id=_instance_id(path, info, cfg),
            messages=messages,
            patch=info.get("submission"),
            exit_raw=info.get("exit_status"),
            stats={
                "tokens_prompt": ms.get("tokens_sent"),
                "tokens_generated": ms.get("tokens_received"),
                "api_calls": ms.get("api_calls"),
                "cost_usd": ms.get("instance_cost"),
            },
            model=_model(cfg),
            source={"format": self.name, "file": path, "line": line},
            rewrite=self.options.rewrite,
        )


def _instance_id(path: str, info: dict[str, Any], cfg: dict[str, Any]) -> str:
    for iid in (dict_at(cfg, "problem_statement").get("id"), info.get("instance_id")):
        if isinstance(iid, str) and iid:
            return iid
    name = Path(path).name
    return name[: -len(".traj")] if name.endswith(".traj") else Path(path).stem
