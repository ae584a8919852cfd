"""A real registry (Debian's `docker-registry`, distribution 2.8) on 127.0.0.1 for pull tests.

Blob storage lives in .cache/test-registry and survives sessions, so the shared base layer is pushed once per
machine; each session pushes under its own namespace and removes the local tags it made.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import IN_CI, ROOT
from tests.sandbox.conftest import toy, toy_t  # noqa: F401 - re-exported fixtures

CONFIG = """version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: {root}
  delete:
    enabled: true
http:
  addr: 127.0.0.1:{port}
"""
AUTH = """auth:
  htpasswd:
    realm: swerl-test
    path: {path}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Registry:
    """A running registry process and the image names a test session pushed to it."""

    proc: subprocess.Popen
    host: str
    namespace: str = field(default_factory=lambda: f"swerl-test-{secrets.token_hex(3)}")
    local_tags: list[str] = field(default_factory=list)

    @property
    def mirror(self) -> str:
        return f"{self.host}/{self.namespace}"

    def push(self, local: str, name: str | None = None) -> str:
        """Push `local` as MIRROR/name (default: its own last path component and tag), then untag it here."""
        ref = f"{self.mirror}/{name or local.rsplit('/', 1)[-1]}"
        subprocess.run(["docker", "tag", local, ref], check=True)
        subprocess.run(["docker", "push", "-q", ref], check=True, capture_output=True)
        subprocess.run(["docker", "rmi", ref], check=True, capture_output=True)
        self.local_tags.append(ref)
        return ref

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def start_registry(root: Path, htpasswd: Path | None = None) -> Registry:
    exe = shutil.which("docker-registry")
    if exe is None:
        if IN_CI:
            pytest.fail("CI=true but docker-registry is missing; run `make setup`")
        pytest.skip("docker-registry is not installed (make setup installs it)")
    port = free_port()
    root.mkdir(parents=True, exist_ok=True)
    cfg = root.parent / f"registry-{port}.yml"
    cfg.write_text(CONFIG.format(root=root, port=port) + (AUTH.format(path=htpasswd) if htpasswd else ""))
    proc = subprocess.Popen([exe, "serve", str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1).close()
            return Registry(proc, f"127.0.0.1:{port}")
        except urllib.error.HTTPError:  # 401: up, and asking for credentials
            return Registry(proc, f"127.0.0.1:{port}")
        except OSError:
            time.sleep(0.1)
    proc.kill()
    pytest.fail("docker-registry did not answer on 127.0.0.1 within 10 s")


@pytest.fixture(scope="session")
def registry() -> Iterator[Registry]:
    reg = start_registry(ROOT / ".cache" / "test-registry" / "data")
    try:
        yield reg
    finally:
        reg.stop()
        if reg.local_tags:
            subprocess.run(["docker", "rmi", "-f", *reg.local_tags], capture_output=True)
