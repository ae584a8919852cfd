"""Defect 5: a malformed chat-completion reply is retried like a 5xx and ends as a PolicyError, never a crash."""

from __future__ import annotations

import asyncio

import pytest

from swerl_cli.core.errors import PolicyError
from swerl_cli.policy.base import Sampling
from swerl_cli.policy.openai import OpenAIPolicy, parse_response
from tests.faults import FAULTS, FaultyServer

MESSAGES = [{"role": "user", "content": "Say ok."}]


def _complete(url: str, retries: int) -> object:
    policy = OpenAIPolicy("m", [url], max_retries=retries, backoff_s=0.001, vllm_extras=False)

    async def main() -> object:
        try:
            return await policy.acomplete(MESSAGES, Sampling())
        finally:
            await policy.aclose()

    return asyncio.run(main())


def test_every_malformed_reply_is_retried_then_the_good_one_is_used() -> None:
    with FaultyServer(["ok"]) as server:
        server.fail_next = list(FAULTS)
        completion = _complete(server.base_url, retries=len(FAULTS))
    assert completion.text == "ok"
    assert server.injected == dict.fromkeys(FAULTS, 1)


@pytest.mark.parametrize("kind", ["message_not_object", "content_not_string", "garbage", "empty"])
def test_malformed_replies_after_the_retries_are_a_policy_error(kind: str) -> None:
    with FaultyServer(["ok"]) as server:
        server.fail_next = [kind] * 3
        with pytest.raises(PolicyError, match=r"gave up after 3 attempts: .*malformed chat completion response"):
            _complete(server.base_url, retries=2)


def test_parse_response_checks_every_field_it_uses() -> None:
    with pytest.raises(ValueError, match="choices\\[0\\].message: expected dict, got str"):
        parse_response({"choices": [{"message": "hi"}]})
    with pytest.raises(ValueError, match="token_ids: expected a list of token ids"):
        parse_response({"choices": [{"message": {"content": "x"}, "token_ids": ["a"]}]})
    assert parse_response({"choices": [{"message": {"content": None}}]}).text == ""
