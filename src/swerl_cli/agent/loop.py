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
    res = await clock.sandbox(sandbox.run, T.setup_command(settings.window), 60.0)
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
    box = _LazySandbox(sandbox, settings, clock)
    messages = initial_messages(task, prompts, settings)
    result = EpisodeResult(messages=messages)
    tools = T.tool_schema(prompts) if settings.action_format == "tools" else None
    book = TokenBook()
    deadline = clock.start + settings.episode_timeout_s
    workdir = task.get("workdir") or "/"
    cwd, open_file = workdir, None
    consecutive_errors = 0
    last_total = 0
    status: str | None = None
    try:
        for _ in range(settings.max_turns):
            if last_total >= settings.max_context_tokens:
                status = "context_limit"
                break
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                status = "timeout"
                break
            t0 = time.perf_counter()
            try:
                comp: Completion = await asyncio.wait_for(
                    policy.acomplete(messages, sampling, tools=tools, episode=info), remaining
                )
            except asyncio.TimeoutError:
                status = "timeout"
                break
            except ContextLimitError:
                status = "context_limit"
                break
            finally:
                clock.policy_s += time.perf_counter() - t0
            action = T.parse_tool_calls(comp.tool_calls) if tools else T.parse_text_action(comp.text)
            assistant: dict[str, Any] = {"role": "assistant", "content": comp.text}
            if comp.tool_calls:
                assistant["tool_calls"] = comp.tool_calls
            messages.append(assistant)
            turn = _turn_record(comp, book, len(messages) - 1, action.error is not None)
            result.turns.append(_with_version(turn, comp, policy))
            last_total = _total_tokens(comp, last_total)
            if action.error is not None:
                consecutive_errors += 1
                if consecutive_errors >= settings.max_format_errors:
                    status = "format_errors"
                    break
                messages.append(_observation(T.format_error_text(action, prompts), action, tools))
                continue
            consecutive_errors = 0
            if action.is_submit:
                status = "submitted"
                break
            timeout = max(1.0, min(settings.command_timeout_s, deadline - time.perf_counter()))
            sb = await box.get()
            res = await clock.sandbox(sb.run, action.command, timeout)
            state = await clock.sandbox(sb.run, T.STATE_COMMAND, 30.0)
            cwd, open_file = T.parse_state(state.output, cwd)
            output = res.output.rstrip("\n")
            if res.timed_out:
                output = (output + "\n" if output else "") + fill(prompts.timeout_output, timeout_s=int(timeout))
            elif not output.strip():
                output = prompts.empty_output
            output = T.truncate(output, settings.max_observation_chars, prompts.truncation_marker)
            text = fill(prompts.observation, output=output, cwd=cwd, file=open_file or "n/a")
            messages.append(_observation(text, action, tools))
        else:
            status = "max_turns"
        result.exit_status = status or "error"
    except SwerlError as e:  # policy, sandbox (its start included) or config failure: the record says which
        result.exit_status, result.error = "error", f"{type(e).__name__}: {e}"
    try:
        result.patch = await clock.sandbox((await box.get()).diff)
    except SwerlError as e:
        if result.error is None:
            result.exit_status, result.error = "error", f"{type(e).__name__}: reading the final diff failed: {e}"
    result.stats = _stats(result, clock, last_total)
    return result


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
    }


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
