"""Each assistant turn records the policy version that sampled it (`turns[].policy_version`): the policy's fixed
version, or with `--policy-version server` the version the server reports around each request, so a weight update
landing between two turns of one episode, or during one request, shows in the record."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from swerl_cli.core.errors import PolicyError
from swerl_cli.policy.base import Sampling
from swerl_cli.policy.openai import OpenAIPolicy
from tests.agent.fakes import command
from tests.agent.test_loop import SUBMIT, episode
from tests.http_server import JsonServer

MESSAGES = [{"role": "user", "content": "Say ok."}]


class VersionedServer(JsonServer):
    """Chat completions with a canned reply; GET /weight_info reports `version`, which a test (or a request, with
    `bump_during`) changes as a weight reload would."""

    def __init__(self) -> None:
        self.version: str | None = "ckpt-0"
        self.bump_during: str | None = None  # the next completion changes the version before it answers
        self.lock = threading.Lock()
        super().__init__()

    def respond(self, path: str, body: Any) -> tuple[int, bytes]:
        if path == "/weight_info":
            if self.version is None:
                return 404, b'{"detail": "Not Found"}'
            return 200, json.dumps({"weight_version": self.version}).encode()
        with self.lock:
            if self.bump_during is not None:
                self.version, self.bump_during = self.bump_during, None
        reply = {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
        return 200, json.dumps(reply).encode()


@pytest.fixture
def vserver():
    with VersionedServer() as s:
        yield s


def _policy(server: VersionedServer) -> OpenAIPolicy:
    return OpenAIPolicy("m", [server.base_url], version="server", vllm_extras=False, max_retries=0)


def test_server_version_is_read_around_each_request(vserver):
    policy = _policy(vserver)

    async def main() -> list:
        try:
            first = await policy.acomplete(MESSAGES, Sampling())
            vserver.version = "ckpt-1"  # a reload between two turns
            second = await policy.acomplete(MESSAGES, Sampling())
            vserver.bump_during = "ckpt-2"  # a reload while the request is in flight
            third = await policy.acomplete(MESSAGES, Sampling())
            return [first, second, third]
        finally:
            await policy.aclose()

    first, second, third = asyncio.run(main())
    assert (first.policy_version, first.policy_version_end) == ("ckpt-0", "ckpt-0")
    assert (second.policy_version, second.policy_version_end) == ("ckpt-1", "ckpt-1")
    assert (third.policy_version, third.policy_version_end) == ("ckpt-1", "ckpt-2")


def test_server_without_weight_info_is_one_clear_policy_error(vserver):
    vserver.version = None
    policy = _policy(vserver)

    async def main() -> None:
        try:
            await policy.acomplete(MESSAGES, Sampling())
        finally:
            await policy.aclose()

    with pytest.raises(PolicyError, match="weight_info: no weight version .*VLLM_SERVER_DEV_MODE=1"):
        asyncio.run(main())


def test_a_fixed_version_is_recorded_on_every_turn_and_a_per_turn_one_wins(monkeypatch):
    from swerl_cli.policy.base import Completion
    from tests.agent.fakes import ScriptedPolicy

    monkeypatch.setattr(ScriptedPolicy, "describe", lambda self: {"backend": "scripted", "version": "ckpt-7"})
    mid = Completion(text=command("ls"), policy_version="v1", policy_version_end="v2")
    result, _, _ = episode([command("ls"), mid, SUBMIT])
    assert [t["policy_version"] for t in result.turns] == ["ckpt-7", "v1", "ckpt-7"]
    assert [t.get("policy_version_end") for t in result.turns] == [None, "v2", None]
