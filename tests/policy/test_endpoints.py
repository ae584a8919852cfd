"""The openai policy against several real HTTP endpoints: load spreading, and a failing endpoint left out."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from swerl_cli.core.errors import PolicyError
from swerl_cli.policy import openai as openai_policy
from swerl_cli.policy.base import Sampling
from swerl_cli.policy.openai import OpenAIPolicy
from tests.agent.server import TinyServer

MESSAGES = [{"role": "system", "content": "You are a test."}, {"role": "user", "content": "Say ok."}]
REPLY = "ok\n```command\nsubmit\n```"


@pytest.fixture(scope="module")
def second_server(tiny_model):
    server = TinyServer(str(tiny_model)).start()
    yield server
    server.stop()


@pytest.fixture
def pair(server, second_server):
    """Two scripted servers over the same tiny model."""
    second_server.reset()
    for s in (server, second_server):
        s.script = [REPLY]
    yield server, second_server
    second_server.reset()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there once the socket is closed


def complete_all(policy: OpenAIPolicy, n: int, *, parallel: bool) -> list:
    async def main() -> list:
        try:
            if parallel:
                return await asyncio.gather(*(policy.acomplete(MESSAGES, Sampling()) for _ in range(n)))
            return [await policy.acomplete(MESSAGES, Sampling()) for _ in range(n)]
        finally:
            await policy.aclose()

    return asyncio.run(main())


def test_several_base_urls_share_the_requests(pair):
    a, b = pair
    policy = OpenAIPolicy("tiny", [a.base_url, b.base_url], backoff_s=0.01)
    comps = complete_all(policy, 8, parallel=True)
    assert all(c.text == REPLY for c in comps)
    assert len(a.requests) + len(b.requests) == 8
    assert len(a.requests) >= 2
    assert len(b.requests) >= 2


def test_a_failing_url_is_left_out_while_another_is_healthy(pair, monkeypatch):
    a, b = pair
    b.fail_next = [503] * 100
    sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded_sleep(delay: float, *args):
        sleeps.append(delay)
        return await real_sleep(min(delay, 0.01), *args)

    monkeypatch.setattr(openai_policy.asyncio, "sleep", recorded_sleep)
    # A cool-down of backoff_s * 2**attempt = 60 s: the failed URL must not be asked again in this test.
    policy = OpenAIPolicy("tiny", [b.base_url, a.base_url], backoff_s=60.0, max_retries=3)
    comps = complete_all(policy, 6, parallel=False)
    assert all(c.text == REPLY for c in comps)
    assert len(b.requests) == 1  # asked once, then cooled down
    assert len(a.requests) == 6
    assert not [d for d in sleeps if d >= 1]  # the retry went straight to the healthy URL, no backoff


def test_a_dead_url_costs_one_attempt_and_the_other_serves(pair):
    a, _ = pair
    dead = closed_port_url()
    policy = OpenAIPolicy("tiny", [dead, a.base_url], backoff_s=60.0, max_retries=2)
    comps = complete_all(policy, 4, parallel=False)
    assert [c.text for c in comps] == [REPLY] * 4
    assert len(a.requests) == 4
    assert policy.endpoints._down_until[0] > time.monotonic()  # still cooling down
    assert policy.endpoints._down_until[1] == 0.0


def test_all_urls_failing_gives_up_with_the_last_error(pair):
    a, b = pair
    a.fail_next, b.fail_next = [500] * 10, [502] * 10
    policy = OpenAIPolicy("tiny", [a.base_url, b.base_url], backoff_s=0.01, max_retries=3)
    with pytest.raises(PolicyError, match=r"gave up after 4 attempts: .*HTTP 50[02]"):
        complete_all(policy, 1, parallel=False)
    assert len(a.requests) + len(b.requests) == 4
    assert len(a.requests) >= 1
    assert len(b.requests) >= 1
