"""Test doubles for the agent loop: a scripted policy and an in-memory sandbox (no Docker, no HTTP, no model).

They implement the real protocols (`swerl_cli.policy.base.Policy`, `swerl_cli.sandbox.base.Sandbox`), so
`run_episode` drives them exactly as it drives the real backends, in milliseconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from swerl_cli.agent import tools as T
from swerl_cli.policy.base import Completion, EpisodeInfo, Sampling
from swerl_cli.sandbox.base import ExecResult


def command(cmd: str, thought: str = "Next step.") -> str:
    """An assistant reply in the text action format that runs `cmd`."""
    return f"{thought}\n```command\n{cmd}\n```"


@dataclass
class Delay:
    """A scripted step that sleeps before answering (to hit the episode's wall-clock limit)."""

    seconds: float
    reply: str | Completion = ""


Step = str | Completion | BaseException | Delay


class ScriptedPolicy:
    """Answers each request with the next scripted step: a reply text, a Completion, or an exception to raise.

    Every request's messages are kept in `requests`, so a test can read exactly what the model was shown.
    """

    name = "scripted"

    def __init__(self, steps: list[Step]):
        self.steps = list(steps)
        self.requests: list[list[dict[str, Any]]] = []
        self.closed = False

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        sampling: Sampling,
        *,
        tools: list[dict[str, Any]] | None = None,
        episode: EpisodeInfo | None = None,
    ) -> Completion:
        self.requests.append([dict(m) for m in messages])
        if not self.steps:
            raise AssertionError("the scripted policy ran out of steps")
        step = self.steps.pop(0)
        if isinstance(step, Delay):
            await asyncio.sleep(step.seconds)
            step = step.reply
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, Completion):
            return step
        return Completion(text=step)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "model": "scripted"}

    async def aclose(self) -> None:
        self.closed = True


@dataclass
class MemorySandbox:
    """A sandbox whose commands are answered by a table (or a function) instead of a shell.

    `outputs` maps a command to its ExecResult (or a bare output string, exit code 0); an unknown command
    answers "" with exit code 0. `fail_on` maps a command to the exception its run raises. `cwd` is what the
    loop's state probe reports. `patch` is what `diff()` returns (`diff_error` makes it raise instead).
    """

    outputs: dict[str, ExecResult | str] = field(default_factory=dict)
    handler: Callable[[str, float], ExecResult] | None = None
    fail_on: dict[str, BaseException] = field(default_factory=dict)
    cwd: str = "/repo"
    patch: str = ""
    diff_error: BaseException | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    commands: list[tuple[str, float]] = field(default_factory=list)
    closed: bool = False
    workdir: str = "/repo"

    def run(self, cmd: str, timeout_s: float = 60.0, *, cap: int | None = None) -> ExecResult:
        if cmd == T.STATE_COMMAND:
            return ExecResult(0, f"{self.cwd}\n")
        self.commands.append((cmd, timeout_s))
        if cmd in self.fail_on:
            raise self.fail_on[cmd]
        if self.handler is not None:
            return self.handler(cmd, timeout_s)
        out = self.outputs.get(cmd, "")
        return ExecResult(0, out) if isinstance(out, str) else out

    def run_uncapped(self, cmd: str, timeout_s: float = 60.0) -> ExecResult:
        return self.run(cmd, timeout_s)

    def write_file(self, path: str, data: str | bytes) -> None:
        self.files[path] = data.encode() if isinstance(data, str) else data

    def read_file(self, path: str) -> bytes:
        return self.files[path]

    def diff(self) -> str:
        if self.diff_error is not None:
            raise self.diff_error
        return self.patch

    def close(self) -> None:
        self.closed = True

    @property
    def agent_commands(self) -> list[str]:
        """The commands the agent ran (the editor's one-time setup command left out)."""
        return [c for c, _ in self.commands if not c.startswith(f"mkdir -p {T.TOOLS_DIR}/bin")]
