"""docker_client against a socket nothing listens on: one-line SandboxError, and no socket left open (the SDK's client
leaked the socket of its failed first request; the ResourceWarning surfaced as an error in whichever test ran next,
twice in one suite run while podman's service was down)."""

from __future__ import annotations

import gc
import socket
import warnings
from pathlib import Path

import pytest

from swerl_cli.core.errors import SandboxError
from swerl_cli.sandbox.docker import docker_client


@pytest.mark.parametrize("kind", ["missing", "refused"])
def test_an_engine_socket_that_does_not_answer_is_one_line_and_leaks_nothing(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "engine.sock"
    if kind == "refused":  # a socket file left by a stopped service: connect() is refused
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(path))
        s.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        with pytest.raises(SandboxError) as info:
            docker_client(f"unix://{path}", "Podman")
        gc.collect()
    msg = str(info.value)
    assert msg.startswith(f"no Podman engine reachable at unix://{path} (unix://{path}: ")
    assert msg.endswith("); start one or use --sandbox local")
    assert "\n" not in msg
