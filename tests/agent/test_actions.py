"""Unit tests of action parsing, observations, prompts, token bookkeeping and the collect config."""

from __future__ import annotations

import json

import pytest

from swerl_cli.agent.loop import AgentSettings, initial_messages
from swerl_cli.agent.prompts import fill, load_prompts
from swerl_cli.agent.tools import parse_state, parse_text_action, parse_tool_calls, truncate
from swerl_cli.collect import CollectConfig
from swerl_cli.core.errors import ConfigError
from swerl_cli.policy import BACKENDS
from swerl_cli.policy.base import Sampling
from swerl_cli.policy.openai import parse_response
from swerl_cli.policy.tokens import TokenBook, rebuild_sequence


def test_parse_text_action_takes_the_single_command_block():
    action = parse_text_action("I will list.\n```command\nls -la\ncat x\n```\n")
    assert (action.command, action.error) == ("ls -la\ncat x", None)


def test_parse_text_action_keeps_inner_fences_of_a_heredoc():
    text = "Write docs.\n```command\ncat > a.md << 'EOF'\n```py\nx\n```\nEOF\n```"
    assert parse_text_action(text).command == "cat > a.md << 'EOF'\n```py\nx\n```\nEOF"


@pytest.mark.parametrize(
    ("text", "error", "n"),
    [
        ("no block at all", "no_command", 0),
        ("```edit 198:198\nx\n```", "no_command", 0),
        ("```command\n\n```", "no_command", 1),
        ("```command\nls\n```\nand\n```command\npwd\n```", "multiple", 2),
    ],
)
def test_parse_text_action_reports_format_errors(text, error, n):
    action = parse_text_action(text)
    assert (action.command, action.error, action.n_blocks) == (None, error, n)


def test_submit_is_recognised_only_as_the_command_itself():
    assert parse_text_action("```command\nsubmit\n```").is_submit
    assert not parse_text_action("```command\ngit diff && submit\n```").is_submit


def test_parse_tool_calls_needs_exactly_one_execute_call():
    call = {"id": "c1", "type": "function", "function": {"name": "execute", "arguments": json.dumps({"command": "ls"})}}
    assert parse_tool_calls([call]).command == "ls"
    assert parse_tool_calls([call, call]).error == "multiple"
    assert parse_tool_calls(None).error == "no_command"
    bad = {"id": "c2", "function": {"name": "execute", "arguments": "{not json"}}
    assert parse_tool_calls([bad]).error == "no_command"


def test_truncate_keeps_head_and_tail_with_marker():
    out = truncate("a" * 50 + "b" * 50, 20, "\n[cut {n}]\n")
    assert out.startswith("a" * 10)
    assert out.endswith("b" * 10)
    assert "[cut 80]" in out
    assert truncate("short", 20, "[{n}]") == "short"


def test_fill_leaves_unknown_braces_alone():
    assert fill("{output} {x} {{y}}", output="o{cwd}") == "o{cwd} {x} {{y}}"


def test_default_prompts_follow_the_paper_structure():
    prompts = load_prompts()
    for section in (
        "# SETTING",
        "# SPECIAL TOOLS",
        "# ENVIRONMENT RESPONSE",
        "# YOUR RESPONSE",
        "# HANDLING TESTS",
        "# USEFUL ADVICE",
    ):
        assert section in prompts.system
    msgs = initial_messages({"problem_statement": "Bug {here}", "workdir": "/testbed"}, prompts, AgentSettings())
    user = msgs[1]["content"]
    assert user.index("# ISSUE DESCRIPTION") < user.index("Bug {here}") < user.index("# CHECKLIST")
    assert user.endswith("(Current directory: /testbed, current file: n/a) bash-$")
    assert "# DEMONSTRATION" not in msgs[0]["content"]
    demo = initial_messages({"problem_statement": "x"}, prompts, AgentSettings(demo=True))
    assert "# DEMONSTRATION" in demo[0]["content"]


def test_prompt_config_rejects_unknown_and_missing_fields(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("system: hi\nsytem_typo: x\n")
    with pytest.raises(ConfigError, match="unknown prompt field 'sytem_typo'"):
        load_prompts(bad)
    bad.write_text("system: hi\n")
    with pytest.raises(ConfigError, match="missing prompt fields"):
        load_prompts(bad)


def test_parse_state_reads_cwd_and_open_file():
    assert parse_state("/testbed/src\n12\n/testbed/a b.py", "/") == ("/testbed/src", "/testbed/a b.py")
    assert parse_state("/x\n1\n", "/") == ("/x", None)
    assert parse_state("/x\n", "/") == ("/x", None)
    assert parse_state("\n", "/home") == ("/home", None)


def test_token_book_splits_delta_and_flags_broken_prefix():
    book = TokenBook()
    t0 = book.turn_fields([1, 2, 3], [4, 5])
    t1 = book.turn_fields([1, 2, 3, 4, 5, 6, 7], [8])
    t2 = book.turn_fields([1, 2, 9, 9], [10])
    assert t0 == {"prompt_token_ids": [1, 2, 3], "delta_token_ids": None, "prefix_ok": True}
    assert t1 == {"prompt_token_ids": None, "delta_token_ids": [6, 7], "prefix_ok": True}
    assert t2 == {"prompt_token_ids": [1, 2, 9, 9], "delta_token_ids": None, "prefix_ok": False}
    turns = [{**t0, "token_ids": [4, 5]}, {**t1, "token_ids": [8]}]
    assert rebuild_sequence(turns) == [1, 2, 3, 4, 5, 6, 7, 8]
    with pytest.raises(ValueError, match="turn 2"):
        rebuild_sequence([*turns, {**t2, "token_ids": [10]}])


def test_parse_response_reads_vllm_token_ids_and_logprobs():
    data = {
        "prompt_token_ids": [1, 2],
        "choices": [
            {
                "message": {"content": "hi"},
                "finish_reason": "stop",
                "token_ids": [7, 8],
                "logprobs": {"content": [{"logprob": -0.5}, {"logprob": -1.0}]},
            }
        ],
        "usage": {"prompt_tokens": 2, "completion_tokens": 2},
    }
    c = parse_response(data)
    assert (c.text, c.token_ids, c.logprobs, c.prompt_token_ids) == ("hi", [7, 8], [-0.5, -1.0], [1, 2])


def test_sampling_marks_truncation_as_biased():
    assert not Sampling().is_biased
    assert Sampling(top_k=20).is_biased
    assert Sampling(top_p=0.8).is_biased
    assert Sampling(temperature=0.7).is_biased


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"shard": "3/2"}, "shard"),
        ({"action_format": "json"}, "action_format"),
        ({"samples": 0}, "samples"),
        ({"edit_check": "flake8"}, "edit_check"),
    ],
)
def test_collect_config_errors_name_the_field(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        CollectConfig(**kwargs)


def test_policy_registry_rejects_unknown_backend():
    with pytest.raises(ConfigError, match="unknown policy 'gpt'"):
        BACKENDS.cls("gpt")
    assert BACKENDS.cls("gold").__name__ == "GoldPolicy"
