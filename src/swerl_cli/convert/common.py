"""Shared pieces of the converters: message normalisation, action rewriting, exit statuses, the output record.

Every converter produces plain OpenAI chat messages (system, user, assistant with optional `tool_calls`, tool with
`tool_call_id`) and hands them to `trajectory_fields`, which rewrites recognisable shell actions into swerl's action
formats (a ```command block in text mode, the `execute` tool in tools mode) and counts what it left alone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# Tools whose only argument is a shell command; swerl runs those as `execute(command=...)`.
SHELL_TOOLS = frozenset({"bash", "execute_bash", "execute", "terminal", "shell", "run", "run_shell_command", "cmd"})
SUBMIT_TOOLS = frozenset({"submit", "finish"})
SHELL_FENCES = frozenset({"", "bash", "sh", "shell", "console", "mswea_bash_command", "command"})
_FENCE = re.compile(r"^```([A-Za-z0-9_-]*)[ \t]*\r?\n(.*?)^```[ \t]*\r?$", re.MULTILINE | re.DOTALL)
_XML_CALL = re.compile(r"<function=([\w.-]+)>(.*?)</function>", re.DOTALL)
_XML_PARAM = re.compile(r"<parameter=([\w.-]+)>\n?(.*?)\n?</parameter>", re.DOTALL)


def text_of(content: Any) -> str | None:
    """Plain text of a message content: a string, a list of parts ({type: text, text}) or a {text} object.

    >>> text_of([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    'ab'
    """
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, dict):
        return text_of(content.get("text", content.get("content")))
    if isinstance(content, list):
        return "".join(t for t in (text_of(p) for p in content) if t)
    return str(content)


def tool_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """An OpenAI tool call with JSON-string arguments (what chat templates and swerl's parser expect)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def normalise_calls(calls: Any, prefix: str) -> list[dict[str, Any]]:
    """OpenAI-shaped (or flat {id, name, arguments}) tool calls -> OpenAI shape; missing ids are made up."""
    out = []
    for i, call in enumerate(calls or []):
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        fn = function if isinstance(function, dict) else call
        out.append(tool_call(str(call.get("id") or f"{prefix}_{i}"), str(fn.get("name") or ""), fn.get("arguments")))
    return out


@dataclass(slots=True)
class ActionStats:
    """How the actions of one trajectory were carried over."""

    rewritten: int = 0
    kept: int = 0
    foreign_tools: set[str] = field(default_factory=set)


def _args(call: dict[str, Any]) -> dict[str, Any] | None:
    raw = call["function"]["arguments"]
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def rewrite_call(call: dict[str, Any], stats: ActionStats) -> dict[str, Any]:
    """A shell tool call becomes swerl's `execute(command=...)`, a submit tool `execute(command="submit")`."""
    name, args = call["function"]["name"], _args(call)
    command = None
    if name in SHELL_TOOLS and args is not None and isinstance(args.get("command"), str) and len(args) == 1:
        command = args["command"]
    elif name in SUBMIT_TOOLS and args is not None and not any(isinstance(v, str) and v for v in args.values()):
        command = "submit"
    if command is None:
        stats.kept += 1
        if name != "execute":
            stats.foreign_tools.add(name)
        return call
    stats.rewritten += name != "execute" or command != (args or {}).get("command")
    return tool_call(call["id"], "execute", {"command": command})


def rewrite_text(content: str, stats: ActionStats, action: str | None = None, thought: str | None = None) -> str:
    """Turn a text-mode reply into swerl's form (reasoning, then one ```command block) when its action is clear.

    `action`/`thought` come from formats that store them apart (SWE-agent). Otherwise the reply's single
    `<function=bash>` call or its single shell-fenced block is used; anything else is kept verbatim.
    """
    blocks = list(_FENCE.finditer(content))
    if sum(b.group(1) == "command" for b in blocks) == 1:
        stats.kept += 1
        return content
    if action is not None and action.strip():
        stats.rewritten += 1
        head = (thought if thought is not None else "").rstrip()
        return f"{head}\n\n```command\n{action.strip(chr(10))}\n```".lstrip("\n")
    calls = list(_XML_CALL.finditer(content))
    if len(calls) == 1:
        name, params = calls[0].group(1), dict(_XML_PARAM.findall(calls[0].group(2)))
        command = params.get("command") if name in SHELL_TOOLS and set(params) == {"command"} else None
        command = "submit" if name in SUBMIT_TOOLS and not params else command
        if command is not None:
            stats.rewritten += 1
            span = calls[0].span()
            return f"{content[: span[0]]}```command\n{command}\n```{content[span[1] :]}"
        stats.foreign_tools.add(name)
    shell = [b for b in blocks if b.group(1) in SHELL_FENCES]
    if len(shell) == 1:
        stats.rewritten += 1
        b = shell[0]
        return f"{content[: b.start()]}```command\n{b.group(2).rstrip(chr(10))}\n```{content[b.end() :]}"
    stats.kept += 1
    return content


def finish_messages(messages: list[dict[str, Any]], rewrite: bool) -> tuple[list[dict[str, Any]], ActionStats]:
    """Rewrite the assistant actions of normalised messages (when `rewrite`), counting what happened."""
    stats = ActionStats()
    for m in messages:
        if m["role"] != "assistant":
            continue
        if m.get("tool_calls"):
            if rewrite:
                m["tool_calls"] = [rewrite_call(c, stats) for c in m["tool_calls"]]
            else:
                stats.kept += len(m["tool_calls"])
                stats.foreign_tools.update(c["function"]["name"] for c in m["tool_calls"])
        elif isinstance(m.get("content"), str) and rewrite and not m.pop("_no_action", False):
            m["content"] = rewrite_text(m["content"], stats, m.pop("_action", None), m.pop("_thought", None))
        else:
            stats.kept += 1
        for k in ("_action", "_thought", "_no_action"):
            m.pop(k, None)
    return messages, stats


# Raw exit statuses of the source agents -> swerl's vocabulary (records.EXIT_STATUSES); the raw value is kept.
EXIT_MAP = {
    "submitted": "submitted",
    "exit_forfeit": "submitted",
    "exit_cost": "max_turns",
    "exit_context": "context_limit",
    "exit_format": "format_errors",
    "exit_command_timeout": "timeout",
    "exit_total_execution_time": "timeout",
    "exit_api": "error",
    "exit_error": "error",
    "exit_environment_error": "error",
    "Submitted": "submitted",
    "LimitsExceeded": "max_turns",
    "TimeExceeded": "timeout",
    "RepeatedFormatError": "format_errors",
    "FormatError": "format_errors",
    "ContextWindowExceeded": "context_limit",
    "ContextWindowExceededError": "context_limit",
}


def map_exit_status(raw: Any) -> str:
    """`submitted (exit_cost)` (SWE-agent's autosubmission) maps by the limit it hit; unknown values are `error`."""
    if not isinstance(raw, str) or not raw:
        return "error"
    m = re.fullmatch(r"submitted \((\w+)\)", raw)
    return EXIT_MAP.get(m.group(1) if m else raw, "error")


def trajectory_fields(
    *,
    instance_id: str,
    messages: list[dict[str, Any]],
    patch: str | None,
    exit_raw: Any,
    exit_status: str | None = None,
    error: str | None = None,
    stats: dict[str, Any],
    model: str | None,
    source: dict[str, Any],
    rewrite: bool,
) -> dict[str, Any]:
    """The fields of a converted trajectory; `convert_paths` adds the run, sample and task and hands them to
    `streams.trajectories.trajectory_record`, the builder `collect` uses too."""
    messages, actions = finish_messages(messages, rewrite)
    exit_status = exit_status or map_exit_status(exit_raw)
    if exit_status == "error" and not error:
        error = f"source exit status {exit_raw!r}" if exit_raw else "source recorded no exit status"
    stats = {
        "turns": sum(m["role"] == "assistant" for m in messages),
        **{k: v for k, v in stats.items() if v is not None},
    }
    return {
        "instance_id": instance_id,
        "policy": {
            "backend": "import",
            "model": model,
            "action_format": "tools" if any(m.get("tool_calls") for m in messages) else "text",
            "actions": {
                "rewritten": actions.rewritten,
                "kept": actions.kept,
                "foreign_tools": sorted(actions.foreign_tools),
            },
        },
        "messages": messages,
        "turns": [],
        "patch": patch if patch is not None else "",
        "exit_status": exit_status,
        "exit_status_raw": exit_raw,
        "error": error if exit_status == "error" else None,
        "stats": stats,
        "source": source,
    }


def message(role: str, content: Any, **extra: Any) -> dict[str, Any]:
    """A normalised chat message (content reduced to text)."""
    out: dict[str, Any] = {"role": role, "content": text_of(content)}
    out.update({k: v for k, v in extra.items() if v is not None})
    return out
