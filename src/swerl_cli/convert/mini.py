"""mini-swe-agent `.traj.json` files: `messages` is the chat list itself, plus `info` and a format version.

Each message may carry an `extra` dict (actions with their tool call ids, raw output, return codes) that
mini-swe-agent strips before calling the model; it is dropped here too. A final `role: exit` message holds the
exit status in `extra.exit_status`; `info.exit_status` and `info.submission` hold the run's end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swerl_cli.convert.base import Converter
from swerl_cli.convert.common import message, normalise_calls, trajectory_fields
from swerl_cli.core.errors import InputError
from swerl_cli.streams.records import dict_at

NAME = "mini-swe-agent"


class MiniSweAgent(Converter):
    """mini-swe-agent `.traj.json` files (one JSON object each)."""

    name = NAME
    detect_rank = 20
    whole_file = True
    document_suffixes = (".traj.json",)

    @classmethod
    def matches(cls, obj: Any) -> bool:
        """A JSON object with a `messages` list and an `info` object (or mini's `trajectory_format` tag)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
            return False
        fmt = obj.get("trajectory_format")
        return isinstance(obj.get("info"), dict) or (isinstance(fmt, str) and fmt.startswith("mini-swe-agent"))

    def convert(self, obj: Any, path: str, line: int | None) -> dict[str, Any]:
        """One `.traj.json` object -> one trajectory record."""
        if not self.matches(obj):
            raise InputError(path, line, "messages", f"missing: not a {NAME} .traj.json (needs 'messages', 'info')")
        info = dict_at(obj, "info")
        exit_raw = info.get("exit_status")
        messages: list[dict[str, Any]] = []
        for i, m in enumerate(obj["messages"]):
            role = m.get("role") if isinstance(m, dict) else None
            if role == "exit":
                extra = dict_at(m, "extra")
                exit_raw = exit_raw or extra.get("exit_status")
                continue
            if role not in ("system", "user", "assistant", "tool"):
                raise InputError(path, line, f"messages[{i}].role", "missing or not system/user/assistant/tool/exit")
            if role == "assistant":
                calls = normalise_calls(m.get("tool_calls"), f"call_{i}")
                messages.append(message("assistant", m.get("content"), tool_calls=calls or None))
            elif role == "tool":
                if not m.get("tool_call_id"):
                    raise InputError(path, line, f"messages[{i}].tool_call_id", "missing on a tool message")
                messages.append(message("tool", m.get("content"), tool_call_id=str(m["tool_call_id"])))
            else:
                messages.append(message(role, m.get("content")))
        ms = dict_at(info, "model_stats")
        model_cfg = ((info.get("config") or {}).get("model") or {}) if isinstance(info.get("config"), dict) else {}
        iid = obj.get("instance_id") or info.get("instance_id")
        if not isinstance(iid, str) or not iid:
            name = Path(path).name
            iid = name.split(".traj")[0] if ".traj" in name else Path(path).stem
        return trajectory_fields(
            instance_id=iid,
            messages=messages,
            patch=info.get("submission"),
            exit_raw=exit_raw,
            stats={"api_calls": ms.get("api_calls"), "cost_usd": ms.get("instance_cost")},
            model=model_cfg.get("model_name") if isinstance(model_cfg, dict) else None,
            source={"format": self.name, "file": path, "line": line, "version": obj.get("trajectory_format")},
            rewrite=self.options.rewrite,
        )
