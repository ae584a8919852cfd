"""One graded record -> the compact body the trajectory viewer shows (turns split, long texts cut, no token ids).

A body keeps what a reader needs: each message's text (observations cut to `max_chars`, head and tail kept),
for each assistant turn its reasoning, its command (text block or tool call), the format-error flag and the token
count; the final patch; the grade (per-test FAIL_TO_PASS / PASS_TO_PASS results, log tail). System prompts are
usually identical across a run, so they go to a shared table and a body names its prompt by index.
"""

from __future__ import annotations

from typing import Any

from swerl_cli.agent.tools import parse_text_action, parse_tool_calls
from swerl_cli.report.aggregate import audit_codes
from swerl_cli.streams.records import dict_at, list_at

MAX_TESTS = 500  # per list; the rest is counted


def cut(text: str, max_chars: int) -> str:
    """Keep the head and tail of a long text: `cut("abcdefghij", 6) == "abc\\n[... 4 characters cut ...]\\nhij"`."""
    if len(text) <= max_chars:
        return text
    half = max_chars // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[len(text) - half :]}"


def _text(content: Any) -> str:
    """Message content as text: a string, or the text parts of an OpenAI content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _assistant(msg: dict[str, Any], turn: dict[str, Any] | None, max_chars: int) -> dict[str, Any]:
    text = _text(msg.get("content"))
    if msg.get("tool_calls"):
        action = parse_tool_calls(msg["tool_calls"])
        reasoning = text
    else:
        action = parse_text_action(text)
        reasoning = text.split("```command", 1)[0].strip() if action.command is not None else text
    out: dict[str, Any] = {"role": "assistant", "text": cut(reasoning, max_chars), "cmd": action.command}
    if turn is not None:
        out["format_error"] = bool(turn.get("format_error"))
        out["tokens"] = len(turn.get("token_ids") or [])
        out["finish"] = turn.get("finish_reason")
    else:
        out["format_error"] = action.error is not None
    return out


def _tests(grade: dict[str, Any]) -> dict[str, Any]:
    tests = dict_at(grade, "tests")
    status = dict_at(tests, "status")
    out: dict[str, Any] = {}
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        res = dict_at(tests, key)
        rows = [[t, True, status.get(t)] for t in res.get("success") or []]
        rows += [[t, False, status.get(t)] for t in res.get("failure") or []]
        rows.sort(key=lambda r: (r[1], r[0]))  # failures first
        out[key] = rows[:MAX_TESTS]
        out[key + "_more"] = max(0, len(rows) - MAX_TESTS)
    return out


def tamper_flag(grade: dict[str, Any]) -> str:
    """The viewer's `tamper` column: the attribution reason (docs/grading.md), else `set_aside` when the grader set
    aside test-infrastructure edits, else `audit: CODE` when the static audit found something (harness mode records
    it without a reason), else `audit` when the audit flagged the patch, else ''."""
    audit = dict_at(grade, "audit")
    if grade.get("reason"):
        return str(grade["reason"])
    if grade.get("set_aside"):
        return "set_aside"
    codes = audit_codes(grade)
    if codes:
        return f"audit: {codes[0]}"
    return "audit" if audit.get("flagged") else ""


def body_of(obj: dict[str, Any], systems: dict[str, int], max_chars: int = 6000) -> dict[str, Any]:
    """The viewer body of one graded record; `systems` (text -> index) collects the shared system prompts."""
    msgs = list_at(obj, "messages")
    turns = [t for t in obj.get("turns") or [] if isinstance(t, dict)]
    by_index = {t.get("message_index"): t for t in turns}
    assistants = [i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "assistant"]
    for k, i in enumerate(assistants):  # records without message_index: turns in order
        if k < len(turns) and "message_index" not in turns[k]:
            by_index.setdefault(i, turns[k])
    sys_index, shown = None, []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role == "system" and sys_index is None:
            sys_index = systems.setdefault(_text(m.get("content")), len(systems))
        elif role == "assistant":
            shown.append(_assistant(m, by_index.get(i), max_chars))
        else:
            shown.append({"role": role, "text": cut(_text(m.get("content")), max_chars)})
    grade = dict_at(obj, "grade")
    return {
        "id": obj.get("id"),
        "run": obj.get("run"),
        "exit_status": obj.get("exit_status"),
        "error": obj.get("error"),
        "stats": dict_at(obj, "stats"),
        "system": sys_index,
        "messages": shown,
        "patch": cut(obj.get("patch") or "", max_chars * 4),
        "grade": {
            "status": grade.get("status"),
            "resolved": grade.get("resolved"),
            "reward": grade.get("reward"),
            "patch_applied": grade.get("patch_applied"),
            "apply_method": grade.get("apply_method"),
            "error": grade.get("error"),
            "reason": grade.get("reason"),
            "set_aside": list_at(grade, "set_aside"),
            "audit": dict_at(grade, "audit"),
            "duration_s": grade.get("duration_s"),
            "log_tail": cut(grade.get("log_tail") or "", max_chars),
            **_tests(grade),
        },
    }
