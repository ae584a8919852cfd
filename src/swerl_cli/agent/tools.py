"""Actions and observations: parse the one command of an assistant turn, ship the editor, render the result."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from importlib import resources
from pathlib import PurePosixPath as Path
from typing import Any

from swerl_cli.agent.prompts import PromptConfig, fill

TOOLS_DIR = "/tmp/.swerl"
TOOLS_SCRIPT = f"{TOOLS_DIR}/swerl_tools.py"
STATE_FILE = f"{TOOLS_DIR}/state"  # "<first line>\n<open file>", written by the script
EDITOR_TOOLS = ("open", "goto", "scroll_down", "scroll_up", "create", "edit", "replace", "search_file")
TOOL_NAME = "execute"

# A ```command opener at the start of a line; the block ends at the LAST ``` line after it, so fences inside a
# heredoc (markdown written to a file) stay part of the command.
_OPEN = re.compile(r"^```command[ \t]*\r?\n", re.MULTILINE)
_CLOSE = re.compile(r"^```[ \t]*\r?$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Action:
    """What one assistant turn asked for: a command, or a format error (`error` set, `command` None)."""

    command: str | None
    error: str | None = None  # "no_command" | "multiple"
    n_blocks: int = 0
    tool_call_id: str | None = None

    @property
    def is_submit(self) -> bool:
        return self.command is not None and self.command.strip().split(maxsplit=1)[:1] == ["submit"]


def parse_text_action(text: str) -> Action:
    """Extract exactly one ```command block from a reply.

    >>> parse_text_action("Look.\\n```command\\nls -a\\n```").command
    'ls -a'
    """
    text = text or ""
    openers = list(_OPEN.finditer(text))
    if len(openers) > 1:
        return Action(None, "multiple", len(openers))
    closes = list(_CLOSE.finditer(text, openers[0].end())) if openers else []
    if not closes:
        return Action(None, "no_command", 0)
    command = text[openers[0].end() : closes[-1].start()].rstrip("\r\n")
    if not command.strip():
        return Action(None, "no_command", 1)
    return Action(command, None, 1)


def parse_tool_calls(tool_calls: list[dict[str, Any]] | None) -> Action:
    """Extract exactly one `execute(command=...)` call from native tool calls."""
    calls = tool_calls or []
    if not calls:
        return Action(None, "no_command", 0)
    if len(calls) > 1:
        return Action(None, "multiple", len(calls), tool_call_id=calls[0].get("id"))
    call = calls[0]
    fn = call.get("function") or {}
    args = fn.get("arguments")
    try:
        parsed = json.loads(args) if isinstance(args, str) else (args or {})
    except json.JSONDecodeError:
        parsed = {}
    command = parsed.get("command") if isinstance(parsed, dict) else None
    if fn.get("name") != TOOL_NAME or not isinstance(command, str) or not command.strip():
        return Action(None, "no_command", 1, tool_call_id=call.get("id"))
    return Action(command, None, 1, tool_call_id=call.get("id"))


def tool_schema(prompts: PromptConfig) -> list[dict[str, Any]]:
    """The OpenAI `tools` list of the native tool-calling format: one `execute` function."""
    return [
        {
            "type": "function",
            "function": {
                "name": TOOL_NAME,
                "description": prompts.tool_description,
                "parameters": {
                    "type": "object",
                    "properties": {"command": {"type": "string", "description": "the command to run"}},
                    "required": ["command"],
                },
            },
        }
    ]


def format_error_text(action: Action, prompts: PromptConfig) -> str:
    """The error observation for a malformed turn."""
    if action.error == "multiple":
        return fill(prompts.format_error_multiple, n=action.n_blocks)
    return prompts.format_error_no_command


def truncate(text: str, max_chars: int, marker: str) -> str:
    """Keep the head and tail of a long output with a marker in between.

    >>> truncate("abcdefghij", 4, "[{n}]")
    'ab[6]ij'
    """
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    head = max_chars // 2
    tail = max_chars - head
    return text[:head] + fill(marker, n=len(text) - max_chars) + text[len(text) - tail :]


def tools_script() -> bytes:
    """The in-sandbox editor script (tools_bin/swerl_tools.py) as bytes."""
    return resources.files("swerl_cli.agent").joinpath("tools_bin/swerl_tools.py").read_bytes()


# Each tool is a sh wrapper around one isolated interpreter (-I -S: no site, no PYTHON* variables, so nothing the
# agent exports can break the editor). The script is imported, not run, so its bytecode is cached after first use.
_LAUNCH = (
    f'import sys; sys.path[:0] = ["{TOOLS_DIR}"]; import {Path(TOOLS_SCRIPT).stem}; '
    f"sys.exit({Path(TOOLS_SCRIPT).stem}.main(sys.argv[1:]))"
)


def setup_command(window: int, edit_check: str = "syntax", *, link_bin: bool = True) -> str:
    """Shell command run once per episode after the script is written: wrappers on PATH, pagers off, the editor's
    window and its syntax check (`syntax` or `off`). `link_bin` also links the wrappers into /usr/local/bin (for
    commands that reset PATH): only in a sandbox of its own, never on the host (a local sandbox planted them there,
    pointing into a /tmp directory anyone could create)."""
    wrappers = {t: f'#!/bin/sh\nexec python3 -I -S -c {shlex.quote(_LAUNCH)} {t} "$@"' for t in EDITOR_TOOLS}
    wrappers["submit"] = '#!/bin/sh\necho "Error: submit must be the only command in its block."\nexit 1'
    writes = "; ".join(f"printf '%s\\n' {shlex.quote(body)} > {TOOLS_DIR}/bin/{t}" for t, body in wrappers.items())
    return (
        f"mkdir -p {TOOLS_DIR}/bin && {writes}; chmod +x {TOOLS_DIR}/bin/*; "
        + (f"(ln -sf {TOOLS_DIR}/bin/* /usr/local/bin/ 2>/dev/null || true); " if link_bin else "")
        + f"printf '1\\n' > {STATE_FILE}; "
        f"export PATH={TOOLS_DIR}/bin:$PATH SWERL_WINDOW={int(window)} SWERL_EDIT_CHECK={shlex.quote(edit_check)} "
        f"PAGER=cat GIT_PAGER=cat MANPAGER=cat "
        f"PIP_PROGRESS_BAR=off TERM=dumb"
    )


# Printed after each command to learn the prompt line's directory and open file (one more round trip, builtins
# only: no process is forked).
STATE_COMMAND = (
    f"printf '%s\\n' \"$PWD\"; __swerl_s=; {{ IFS= read -r -d '' __swerl_s < {shlex.quote(STATE_FILE)}; "
    "printf '%s' \"$__swerl_s\"; } 2>/dev/null; true"
)


def parse_state(output: str, default_cwd: str) -> tuple[str, str | None]:
    """(cwd, open file) from STATE_COMMAND's output."""
    first, _, rest = output.partition("\n")
    cwd = first.strip() or default_cwd
    start, sep, file = rest.partition("\n")
    if not sep or not start.strip().isdigit():
        return cwd, None
    return cwd, file or None
