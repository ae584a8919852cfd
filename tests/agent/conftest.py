"""Fixtures of the agent tests: the OpenAI-compatible test server over the tiny model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.server import TinyServer


@pytest.fixture(scope="session")
def tiny_server(tiny_model: Path) -> Iterator[TinyServer]:
    """A running test server (session-wide); call `.reset()` in tests that script or break it."""
    server = TinyServer(str(tiny_model)).start()
    yield server
    server.stop()


@pytest.fixture
def server(tiny_server: TinyServer) -> Iterator[TinyServer]:
    """The session server, reset before and after the test."""
    tiny_server.reset()
    yield tiny_server
    tiny_server.reset()
