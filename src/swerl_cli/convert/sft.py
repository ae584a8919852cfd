"""SFT rows (SWE-smith `ft_*.jsonl`, SWE-Gym, R2E-Gym releases): `{"messages": [...], "instance_id": ...}`.

Tool calls are usually rendered as text in the assistant content (e.g. `<function=bash>` blocks); OpenAI-shaped
`tool_calls` and `role: tool` messages are accepted too. Rows carry no exit status and no patch unless a
`patch` / `model_patch` field is present; they are recorded as `submitted`.
"""

from __future__ import annotations

from typing import Any

from swerl_cli.convert.base import Converter
from swerl_cli.convert.common import message, normalise_calls, trajectory_fields
from swerl_cli.core.errors import InputError

NAME = "sft"


class SftRows(Converter):
    """SFT rows (JSON Lines, or a JSON array of rows)."""

    name = NAME
    detect_rank = 40

    @classmethod
    def matches(cls, obj: Any) -> bool:
        """A row with a `messages` list and no trajectory-file keys."""
        return isinstance(obj, dict) and isinstance(obj.get("messages"), list) and "info" not in obj

    def convert(self, obj: Any, path: str, line: int | None) -> dict[str, Any]:
        """One SFT row -> one trajectory record."""
        if not self.matches(obj):
            raise InputError(path, line, "messages", "missing: an SFT row needs a 'messages' array")
        iid = obj.get("instance_id")
        if not isinstance(iid, str) or not iid:
            raise InputError(path, line, "instance_id", "missing: an SFT row needs 'instance_id' to name its task")
        messages = []
        for i, m in enumerate(obj["messages"]):
            role = m.get("role") if isinstance(m, dict) else None
            if role not in ("system", "user", "assistant", "tool"):
                raise InputError(path, line, f"messages[{i}].role", "missing or not system/user/assistant/tool")
            extra: dict[str, Any] = {}
            if role == "assistant":
                extra["tool_calls"] = normalise_calls(m.get("tool_calls"), f"call_{i}") or None
            if role == "tool":
                extra["tool_call_id"] = str(m.get("tool_call_id") or "")
            messages.append(message(role, m.get("content"), **extra))
        patch = obj.get("patch", obj.get("model_patch"))
        return trajectory_fields(
            instance_id=iid,
            messages=messages,
            patch=patch if isinstance(patch, str) else None,
            exit_raw=obj.get("exit_status"),
            exit_status="submitted" if obj.get("exit_status") is None else None,
            stats={},
            model=obj.get("model") if isinstance(obj.get("model"), str) else None,
            source={"format": self.name, "file": path, "line": line},
            rewrite=self.options.rewrite,
        )
