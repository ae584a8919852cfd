"""The agent loop against a scripted policy and an in-memory sandbox: every way an episode ends, in milliseconds."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from swerl_cli.agent.loop import AgentSettings, EpisodeResult, run_episode
from swerl_cli.agent.prompts import load_prompts
from swerl_cli.core.errors import ConfigError, PolicyError, SandboxError
from swerl_cli.policy.base import Completion, ContextLimitError, EpisodeInfo, Sampling
from swerl_cli.sandbox.base import ExecResult
from tests.agent.fakes import Delay, MemorySandbox, ScriptedPolicy, command

PROMPTS = load_prompts()
TASK = {"instance_id": "toy__calc-1", "problem_statement": "add() subtracts", "workdir": "/repo"}
INFO = EpisodeInfo("toy__calc-1", 0, "run0", TASK)
SUBMIT = command("submit", "Done.")
PATCH = "diff --git a/calc.py b/calc.py\n"


def episode(
    steps: list, sandbox: MemorySandbox | None = None, **settings: object
) -> tuple[EpisodeResult, ScriptedPolicy, MemorySandbox]:
    policy = ScriptedPolicy(steps)
    sandbox = sandbox if sandbox is not None else MemorySandbox(patch=PATCH)
    cfg = dataclasses.replace(AgentSettings(), **settings)
    result = asyncio.run(run_episode(TASK, policy, sandbox, Sampling(), PROMPTS, cfg, INFO))
    return result, policy, sandbox


def test_submit_ends_the_episode_with_the_diff_and_stats():
    result, policy, sandbox = episode([command("ls"), SUBMIT], MemorySandbox(outputs={"ls": "calc.py\n"}, patch=PATCH))
    assert result.exit_status == "submitted"
    assert result.error is None
    assert result.patch == PATCH
    assert sandbox.agent_commands == ["ls"]
    assert [m["role"] for m in result.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert "calc.py" in result.messages[3]["content"]
    assert "/repo" in result.messages[3]["content"]  # the prompt line shows the probed cwd
    assert result.stats["turns"] == 2
    assert result.stats["format_errors"] == 0
    assert len(policy.requests) == 2
    assert not sandbox.closed  # the caller owns the sandbox's lifetime


def test_awaitable_sandbox_is_started_lazily_and_its_wait_counts_as_sandbox_time():
    async def main() -> EpisodeResult:
        async def start() -> MemorySandbox:
            await asyncio.sleep(0.3)  # far longer than the instant scripted policy's first turn, even under load
            return MemorySandbox(patch=PATCH)

        return await run_episode(
            TASK, ScriptedPolicy([command("ls"), SUBMIT]), start(), Sampling(), PROMPTS, AgentSettings(), INFO
        )

    result = asyncio.run(main())
    assert result.exit_status == "submitted"
    assert result.patch == PATCH
    # the first turn's request overlaps the start, so only the rest of the 0.3 s is waited for (and counted)
    assert result.stats["sandbox_s"] >= 0.2


def test_max_turns_ends_the_episode_and_keeps_the_diff():
    result, policy, sandbox = episode([command("true")] * 3, max_turns=3)
    assert result.exit_status == "max_turns"
    assert result.patch == PATCH
    assert result.stats["turns"] == 3
    assert len(sandbox.agent_commands) == 3
    assert policy.steps == []


def test_context_limit_from_the_policy_ends_the_episode():
    result, _, _ = episode([command("ls"), ContextLimitError("prompt of 99 tokens fills the context of 64")])
    assert result.exit_status == "context_limit"
    assert result.error is None
    assert result.stats["turns"] == 1


def test_context_limit_from_counted_tokens_ends_before_the_next_request():
    big = Completion(text=command("ls"), token_ids=[1] * 10, prompt_token_ids=[2] * 95)
    result, policy, _ = episode([big, SUBMIT], max_context_tokens=100)
    assert result.exit_status == "context_limit"
    assert len(policy.requests) == 1
    assert result.stats["tokens_total"] == 105
    assert result.stats["tokens_generated"] == 10


def test_slow_policy_hits_the_episode_timeout():
    result, _, _ = episode([Delay(1.0, SUBMIT)], episode_timeout_s=0.05)
    assert result.exit_status == "timeout"
    assert result.stats["wall_s"] < 1.0


def test_consecutive_format_errors_end_the_episode_and_each_gets_an_error_observation():
    result, _, sandbox = episode(["no block here", "still none", "nothing"], max_format_errors=3)
    assert result.exit_status == "format_errors"
    assert result.stats["format_errors"] == 3
    assert [t["format_error"] for t in result.turns] == [True, True, True]
    assert sandbox.agent_commands == []
    observations = [m["content"] for m in result.messages if m["role"] == "user"][1:]
    assert observations == [PROMPTS.format_error_no_command] * 2  # the third error ends the episode


def test_a_good_turn_resets_the_format_error_count():
    two_blocks = command("ls") + "\n" + command("pwd")
    result, _, _ = episode(["oops", command("ls"), two_blocks, SUBMIT], max_format_errors=2)
    assert result.exit_status == "submitted"
    assert result.stats["format_errors"] == 2
    assert "2" in result.messages[-2]["content"]  # the "multiple blocks" error names how many it saw


def test_policy_error_is_an_error_record_with_the_message():
    result, _, _ = episode([command("ls"), PolicyError("server answered 500 three times")])
    assert result.exit_status == "error"
    assert result.error == "PolicyError: server answered 500 three times"
    assert result.patch == PATCH  # the diff is still read for the record
    assert result.stats["turns"] == 1


def test_sandbox_error_during_a_command_is_an_error_record():
    sandbox = MemorySandbox(fail_on={"make": SandboxError("container died")}, patch=PATCH)
    result, _, _ = episode([command("make"), SUBMIT], sandbox)
    assert result.exit_status == "error"
    assert result.error == "SandboxError: container died"


def test_failing_final_diff_turns_a_submitted_episode_into_an_error():
    result, _, _ = episode([SUBMIT], MemorySandbox(diff_error=SandboxError("no such container")))
    assert result.exit_status == "error"
    assert result.error == "SandboxError: reading the final diff failed: no such container"


def test_failing_editor_setup_is_an_error_naming_the_output():
    def handler(cmd: str, timeout_s: float) -> ExecResult:
        return ExecResult(1, "mkdir: read-only file system") if cmd.startswith("mkdir -p") else ExecResult(0, "")

    result, _, _ = episode([command("ls")], MemorySandbox(handler=handler))
    assert result.exit_status == "error"
    assert "could not install the editor tools" in result.error
    assert "read-only file system" in result.error


def test_unexpected_policy_exception_is_not_swallowed():
    # A bug (not a SwerlError) must surface with its traceback, never become a quiet error record.
    with pytest.raises(ZeroDivisionError):
        episode([ZeroDivisionError("bug")])


def test_unexpected_sandbox_exception_is_not_swallowed():
    with pytest.raises(KeyError):
        episode([command("ls")], MemorySandbox(fail_on={"ls": KeyError("bug")}))


def test_long_observation_is_truncated_in_the_middle_with_a_marker():
    out = "A" * 500 + "B" * 500
    result, _, _ = episode(
        [command("cat big"), SUBMIT], MemorySandbox(outputs={"cat big": out}), max_observation_chars=100
    )
    obs = result.messages[3]["content"]
    assert "A" * 50 + "\n[... 900 characters of output cut here ...]\n" + "B" * 50 in obs
    assert "A" * 51 not in obs


def test_timed_out_command_and_empty_output_get_their_notes():
    sandbox = MemorySandbox(outputs={"sleep 9": ExecResult(-1, "partial", timed_out=True), "true": ""})
    result, _, sandbox = episode([command("sleep 9"), command("true"), SUBMIT], sandbox, command_timeout_s=7)
    timed_out, empty = result.messages[3]["content"], result.messages[5]["content"]
    assert "partial\nError: the command timed out after 7 seconds" in timed_out
    assert PROMPTS.empty_output in empty
    assert ("sleep 9", 7.0) in sandbox.commands


def test_native_tool_calls_get_tool_messages():
    call = {"id": "c1", "type": "function", "function": {"name": "execute", "arguments": '{"command": "ls"}'}}
    submit = {"id": "c2", "type": "function", "function": {"name": "execute", "arguments": '{"command": "submit"}'}}
    steps = [Completion(text="", tool_calls=[call]), Completion(text="", tool_calls=[submit])]
    result, _, sandbox = episode(steps, action_format="tools")
    assert result.exit_status == "submitted"
    assert sandbox.agent_commands == ["ls"]
    assert result.messages[3]["role"] == "tool"
    assert result.messages[3]["tool_call_id"] == "c1"
    assert result.messages[2]["tool_calls"] == [call]


@pytest.mark.parametrize("error", [SandboxError("image swerl-x:never not found"), ConfigError("unknown backend 'k8s'")])
def test_a_sandbox_that_cannot_start_is_an_error_record_with_stats(error):
    async def main() -> EpisodeResult:
        async def start() -> MemorySandbox:
            raise error

        return await run_episode(
            TASK, ScriptedPolicy([command("ls")]), start(), Sampling(), PROMPTS, AgentSettings(), INFO
        )

    result = asyncio.run(main())
    assert result.exit_status == "error"
    assert result.error == f"{type(error).__name__}: {error}"
    assert result.patch == ""
    assert result.stats["turns"] == 1  # the first request overlapped the start
    assert set(result.stats) >= {"turns", "tokens_total", "wall_s", "sandbox_s", "policy_s"}


def test_the_fakes_implement_the_real_protocols():
    from swerl_cli.policy.base import Policy
    from swerl_cli.sandbox.base import Sandbox

    assert isinstance(ScriptedPolicy([]), Policy)
    assert isinstance(MemorySandbox(), Sandbox)
