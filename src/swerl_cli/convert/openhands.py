"""OpenHands `output.jsonl` (EvalOutput rows): `instance_id`, `test_result.git_patch`, `history`, `metrics`, `error`.

`history` holds typed events, not chat messages. The SDK (V1) form has a `kind` per event: SystemPromptEvent,
MessageEvent (`llm_message`), ActionEvent (`thought`, `tool_call`, `tool_call_id`, `tool_name`; parallel calls of
one reply share `llm_response_id`), ObservationEvent / AgentErrorEvent / UserRejectObservation (`tool_call_id`).
The older runtime (V0) form has `action` / `observation` names with `args` / `content` and an optional
`tool_call_metadata`. Both become chat messages; other events (state updates, condensation) are skipped.
"""

from __future__ import annotations

from typing import Any

from swerl_cli.convert.base import Converter
from swerl_cli.convert.common import message, text_of, tool_call, trajectory_fields
from swerl_cli.core.errors import InputError
from swerl_cli.streams.records import dict_at

NAME = "openhands"


def _kind(ev: dict[str, Any]) -> str:
    k = str(ev.get("kind") or "")
    return {"system_prompt": "SystemPromptEvent", "message": "MessageEvent", "action": "ActionEvent"}.get(
        k, {"observation": "ObservationEvent"}.get(k, k)
    )


def _v1(events: list[Any], path: str, line: int | None) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    open_reply: tuple[Any, dict[str, Any]] | None = None  # (llm_response_id, assistant message)
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise InputError(path, line, f"history[{i}]", "expected an event object")
        kind = _kind(ev)
        if kind == "ActionEvent":
            call = dict_at(ev, "tool_call")
            call_id = str(ev.get("tool_call_id") or call.get("id") or f"call_{i}")
            name = str(call.get("name") or ev.get("tool_name") or "")
            args = call.get("arguments")
            if args is None and isinstance(ev.get("action"), dict):
                args = {k: v for k, v in ev["action"].items() if k != "kind"}
            rid = ev.get("llm_response_id")
            if open_reply is not None and rid is not None and open_reply[0] == rid:
                open_reply[1]["tool_calls"].append(tool_call(call_id, name, args))
                continue
            thought = text_of(ev.get("thought")) or None
            msg = message("assistant", thought, tool_calls=[tool_call(call_id, name, args)])
            messages.append(msg)
            open_reply = (rid, msg)
            continue
        open_reply = None
        if kind == "SystemPromptEvent":
            messages.append(message("system", ev.get("system_prompt")))
        elif kind == "MessageEvent":
            llm = dict_at(ev, "llm_message")
            role = llm.get("role") or ("user" if ev.get("source") == "user" else "assistant")
            messages.append(message(str(role), llm.get("content")))
        elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            if not ev.get("tool_call_id"):
                raise InputError(path, line, f"history[{i}].tool_call_id", f"missing on a {kind}")
            obs = ev.get("observation")
            text = text_of(obs.get("content", obs.get("output"))) if isinstance(obs, dict) else text_of(obs)
            if kind != "ObservationEvent":
                text = text_of(ev.get("error") or ev.get("rejection_reason"))
            messages.append(message("tool", text or "", tool_call_id=str(ev["tool_call_id"])))
    return messages


def _v0(events: list[Any], path: str, line: int | None) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise InputError(path, line, f"history[{i}]", "expected an event object")
        meta = dict_at(ev, "tool_call_metadata")
        args = dict_at(ev, "args")
        if "action" in ev:
            act, src = ev["action"], ev.get("source")
            if act == "system":
                messages.append(message("system", args.get("content") or ev.get("message")))
            elif act == "message":
                role = "user" if src == "user" else "assistant"
                messages.append(message(role, args.get("content") or ev.get("message")))
            elif src == "agent":
                name = meta.get("function_name") or ("execute" if act == "run" else str(act))
                call_args = {"command": args.get("command", "")} if act == "run" else args
                call = tool_call(str(meta.get("tool_call_id") or f"call_{i}"), name, call_args)
                messages.append(message("assistant", args.get("thought") or None, tool_calls=[call]))
        elif "observation" in ev and messages and messages[-1].get("tool_calls"):
            call_id = meta.get("tool_call_id") or messages[-1]["tool_calls"][-1]["id"]
            messages.append(message("tool", ev.get("content") or "", tool_call_id=str(call_id)))
    return messages


class OpenHands(Converter):
    """OpenHands `output.jsonl` rows."""

    name = NAME
    detect_rank = 30

    @classmethod
    def matches(cls, obj: Any) -> bool:
        """An EvalOutput row: `instance_id` plus `history` or `test_result`."""
        if not isinstance(obj, dict) or not isinstance(obj.get("instance_id"), str):
            return False
        return "test_result" in obj or (isinstance(obj.get("history"), list) and "messages" not in obj)

    def convert(self, obj: Any, path: str, line: int | None) -> dict[str, Any]:
        """One EvalOutput row -> one trajectory record."""
        if not self.matches(obj):
            raise InputError(path, line, "instance_id", "missing: not an OpenHands EvalOutput row")
        history = obj.get("history") or []
        if not isinstance(history, list):
            raise InputError(path, line, "history", "expected an array of events")
        v1 = any(isinstance(e, dict) and "kind" in e for e in history)
        messages = _v1(history, path, line) if v1 else _v0(history, path, line)
        tr = dict_at(obj, "test_result")
        err = obj.get("error")
        exit_status = "submitted"
        if err:
            low = str(err).lower()
            exit_status = "max_turns" if "iteration" in low else "context_limit" if "context" in low else "error"
        metrics = dict_at(obj, "metrics")
        usage = dict_at(metrics, "accumulated_token_usage")
        meta = dict_at(obj, "metadata")
        llm = meta.get("llm_config") or meta.get("llm") or {}
        return trajectory_fields(
            instance_id=obj["instance_id"],
            messages=messages,
            patch=tr.get("git_patch"),
            exit_raw=err,
            exit_status=exit_status,
            error=str(err) if err else None,
            stats={
                "tokens_prompt": usage.get("prompt_tokens"),
                "tokens_generated": usage.get("completion_tokens"),
                "cost_usd": metrics.get("accumulated_cost"),
            },
            model=llm.get("model") if isinstance(llm, dict) else None,
            source={
                "format": self.name,
                "file": path,
                "line": line,
                "attempt": obj.get("attempt"),
                "history": "v1" if v1 else "v0",
            },
            rewrite=self.options.rewrite,
        )
