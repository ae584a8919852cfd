"""The ReAct episode: full history, one command per turn, observations from the sandbox, limits and exits."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from swerl_cli.agent import tools as T
from swerl_cli.agent.prompts import PromptConfig, fill
from swerl_cli.core.aio import within
from swerl_cli.core.errors import SandboxError, SwerlError
from swerl_cli.policy.base import Completion, ContextLimitError, EpisodeInfo, Policy, Sampling
from swerl_cli.policy.tokens import TokenBook
from swerl_cli.sandbox.base import Sandbox


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """Limits and format of one episode (the paper's RL stage 1 by default: 40 turns, 65k context)."""

    max_turns: int = 40
    max_context_tokens: int = 65536
    command_timeout_s: float = 120.0
    episode_timeout_s: float = 3600.0
    max_observation_chars: int = 20000
    max_format_errors: int = 5
    window: int = 100
    edit_check: str = "syntax"
    action_format: str = "text"
    demo: bool = False


@dataclass(slots=True)
class EpisodeResult:
    """Everything an episode produced; collect turns it into a trajectory record."""

    messages: list[dict[str, Any]]
    turns: list[dict[str, Any]] = field(default_factory=list)
    patch: str = ""
    exit_status: str = "error"
    error: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)


class _Clock:
    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.sandbox_s = 0.0
        self.policy_s = 0.0

    async def sandbox(self, fn: Any, *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await asyncio.to_thread(fn, *args)
        finally:
            self.sandbox_s += time.perf_counter() - t0


def initial_messages(task: dict[str, Any], prompts: PromptConfig, settings: AgentSettings) -> list[dict[str, Any]]:
    """System prompt (plus demonstration and tools note when enabled) and the first user message."""
    system = fill(prompts.system, window=settings.window, max_turns=settings.max_turns).rstrip("\n")
    if settings.action_format == "tools":
        system += "\n\n" + prompts.tools_response.strip("\n")
    if settings.demo and prompts.demonstration:
        system += "\n\n" + prompts.demonstration.strip("\n")
    workdir = task.get("workdir") or "/"
    user = fill(
        prompts.instance,
        problem_statement=task.get("problem_statement", ""),
        workdir=workdir,
        hints_text=task.get("hints_text") or "",
        cwd=workdir,
        file="n/a",
    ).rstrip("\n")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


async def prepare_sandbox(sandbox: Sandbox, settings: AgentSettings, clock: _Clock | None = None) -> None:
    """Ship the editor script into the sandbox and define the tool commands in its shell."""
    clock = clock or _Clock()
    await clock.sandbox(sandbox.write_file, T.TOOLS_SCRIPT, T.tools_script())
    link_bin = getattr(sandbox, "isolated", True)  # never into the host's /usr/local/bin (local sandbox)
    res = await clock.sandbox(
        sandbox.run, T.setup_command(settings.window, settings.edit_check, link_bin=link_bin), 60.0
    )
    if res.exit_code != 0:
        raise SandboxError(f"could not install the editor tools in the sandbox: {res.output[-300:]}")


async def run_episode(
    task: dict[str, Any],
    policy: Policy,
    sandbox: Sandbox | Awaitable[Sandbox],
    sampling: Sampling,
    prompts: PromptConfig,
    settings: AgentSettings,
    info: EpisodeInfo,
) -> EpisodeResult:
    """Run one episode to submit or a limit; any SwerlError (policy, sandbox, its start) ends it with `error`.

    `sandbox` may be an awaitable still starting: the first policy request (which needs no sandbox) overlaps it.
    """
    clock = _Clock()
    tools = T.tool_schema(prompts) if settings.action_format == "tools" else None
    result = EpisodeResult(messages=initial_messages(task, prompts, settings))
    box = _LazySandbox(sandbox, settings, clock)
    episode = _Episode(policy, sampling, info, settings, prompts, tools, box, clock, result, task.get("workdir") or "/")
    try:
        episode.result.exit_status = await episode.turns()
    except SwerlError as e:  # policy, sandbox (its start included) or config failure: the record says which
        episode.result.exit_status, episode.result.error = "error", f"{type(e).__name__}: {e}"
    await episode.finish()
    return episode.result


@dataclass(slots=True)
class _Episode:
    """The state of one running episode: the conversation (in `result`), the token book, the clock, and the shell's
    cwd and open file as the last command left them."""

    policy: Policy
    sampling: Sampling
    info: EpisodeInfo
    settings: AgentSettings
    prompts: PromptConfig
    tools: list[dict[str, Any]] | None
    box: _LazySandbox
    clock: _Clock
    result: EpisodeResult
    cwd: str
    open_file: str | None = None
    last_total: int = 0
    book: TokenBook = field(default_factory=TokenBook)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.result.messages

    @property
    def deadline(self) -> float:
        return self.clock.start + self.settings.episode_timeout_s

    async def turns(self) -> str:
        """Turns until submit or a limit; returns the exit status."""
        consecutive_errors = 0
        for _ in range(self.settings.max_turns):
            if self.last_total >= self.settings.max_context_tokens:
                return "context_limit"
            comp = await self._ask()
            if isinstance(comp, str):
                return comp
            action = self._record(comp)
            if action.error is not None:
                consecutive_errors += 1
                if consecutive_errors >= self.settings.max_format_errors:
                    return "format_errors"
                self.messages.append(_observation(T.format_error_text(action, self.prompts), action, self.tools))
                continue
            consecutive_errors = 0
            if action.is_submit:
                return "submitted"
            self.messages.append(_observation(await self._act(action), action, self.tools))
        return "max_turns"

    async def _ask(self) -> Completion | str:
        """The policy's next turn, or the exit status when the episode's time or the model's context ran out."""
        remaining = self.deadline - time.perf_counter()
        if remaining <= 0:
            return "timeout"
        t0 = time.perf_counter()
        try:
            request = self.policy.acomplete(self.messages, self.sampling, tools=self.tools, episode=self.info)
            return await within(request, remaining)
        except asyncio.TimeoutError:
            return "timeout"
        except ContextLimitError:
            return "context_limit"
        finally:
            self.clock.policy_s += time.perf_counter() - t0

    def _record(self, comp: Completion) -> T.Action:
        """Append the assistant message and its turn record; the action it asks for."""
        action = T.parse_tool_calls(comp.tool_calls) if self.tools else T.parse_text_action(comp.text)
        assistant: dict[str, Any] = {"role": "assistant", "content": comp.text}
        if comp.tool_calls:
            assistant["tool_calls"] = comp.tool_calls
        self.messages.append(assistant)
        turn = _turn_record(comp, self.book, len(self.messages) - 1, action.error is not None)
        self.result.turns.append(_with_version(turn, comp, self.policy))
        self.last_total = _total_tokens(comp, self.last_total)
        return action

    async def _act(self, action: T.Action) -> str:
        """Run the action's command in the sandbox; the observation text (output, cwd, open file)."""
        timeout = max(1.0, min(self.settings.command_timeout_s, self.deadline - time.perf_counter()))
        sb = await self.box.get()
        res = await self.clock.sandbox(sb.run, action.command, timeout)
        state = await self.clock.sandbox(sb.run, T.STATE_COMMAND, 30.0)
        self.cwd, self.open_file = T.parse_state(state.output, self.cwd)
        output = res.output.rstrip("\n")
        if res.timed_out:
            output = (output + "\n" if output else "") + fill(self.prompts.timeout_output, timeout_s=int(timeout))
        elif not output.strip():
            output = self.prompts.empty_output
        output = T.truncate(output, self.settings.max_observation_chars, self.prompts.truncation_marker)
        return fill(self.prompts.observation, output=output, cwd=self.cwd, file=self.open_file or "n/a")

    async def finish(self) -> None:
        """Read the final diff (a failure is the episode's error unless it already has one) and the stats."""
        result = self.result
        try:
            result.patch = await self.clock.sandbox((await self.box.get()).diff)
        except SwerlError as e:
            if result.error is None:
                result.exit_status, result.error = "error", f"{type(e).__name__}: reading the final diff failed: {e}"
        result.stats = _stats(result, self.clock, self.last_total)


class _LazySandbox:
    """The episode's sandbox, awaited (and the editor installed) on first use; start time counts as sandbox time."""

    def __init__(self, sandbox: Sandbox | Awaitable[Sandbox], settings: AgentSettings, clock: _Clock):
        # A bare coroutine becomes a task: it starts now (overlapping the first request) and can be awaited twice.
        self._pending = asyncio.ensure_future(sandbox) if inspect.isawaitable(sandbox) else None
        self._sb: Sandbox | None = None if self._pending is not None else sandbox  # type: ignore[assignment]
        self._ready = False
        self.settings, self.clock = settings, clock

    async def get(self) -> Sandbox:
        if self._sb is None:
            t0 = time.perf_counter()
            try:
                self._sb = await self._pending  # type: ignore[misc]
            finally:
                self.clock.sandbox_s += time.perf_counter() - t0
        if not self._ready:
            self._ready = True
            await prepare_sandbox(self._sb, self.settings, self.clock)
        return self._sb


def _observation(text: str, action: T.Action, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    if tools and action.tool_call_id is not None:
        return {"role": "tool", "tool_call_id": action.tool_call_id, "content": text}
    return {"role": "user", "content": text}


def _turn_record(comp: Completion, book: TokenBook, index: int, format_error: bool) -> dict[str, Any]:
    ids = book.turn_fields(comp.prompt_token_ids, comp.token_ids, comp.delta_token_ids)
    n_prompt = len(comp.prompt_token_ids) if comp.prompt_token_ids is not None else comp.usage.get("prompt_tokens", 0)
    return {
        "message_index": index,
        "prompt_token_ids": ids["prompt_token_ids"],
        "delta_token_ids": ids["delta_token_ids"],
        "token_ids": list(comp.token_ids) if comp.token_ids is not None else [],
        "logprobs": comp.logprobs,
        "finish_reason": comp.finish_reason,
        "format_error": format_error,
        "prefix_ok": ids["prefix_ok"],
        "n_closing_tokens": comp.n_closing,
        "n_prompt_tokens": n_prompt,
        "latency_s": round(comp.latency_s, 4),
    } | ({"masked": True} if comp.masked else {})


def _with_version(turn: dict[str, Any], comp: Completion, policy: Any) -> dict[str, Any]:
    """`policy_version`: the version that sampled the turn (the backend's per-turn answer, else its fixed one)."""
    turn["policy_version"] = comp.policy_version or policy.describe().get("version")
    if comp.policy_version_end is not None and comp.policy_version_end != turn["policy_version"]:
        turn["policy_version_end"] = comp.policy_version_end
    return turn


def _total_tokens(comp: Completion, previous: int) -> int:
    n_prompt = len(comp.prompt_token_ids) if comp.prompt_token_ids is not None else comp.usage.get("prompt_tokens")
    n_new = len(comp.token_ids) if comp.token_ids is not None else comp.usage.get("completion_tokens")
    if n_prompt is None or n_new is None:
        return previous
    return n_prompt + n_new


def _stats(result: EpisodeResult, clock: _Clock, last_total: int) -> dict[str, Any]:
    turns = result.turns
    return {
        "turns": len(turns),
        "format_errors": sum(1 for t in turns if t["format_error"]),
        "tokens_prompt": turns[-1]["n_prompt_tokens"] if turns else 0,
        "tokens_generated": sum(len(t["token_ids"]) for t in turns),
        "tokens_total": last_total,
        "wall_s": round(time.perf_counter() - clock.start, 4),
        "sandbox_s": round(clock.sandbox_s, 4),
        "policy_s": round(clock.policy_s, 4),
    }
