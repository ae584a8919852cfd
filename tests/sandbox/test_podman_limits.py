"""The podman backend refuses an engine that would ignore the sandbox limits (rootless podman on cgroups v1
accepts memory, CPU and pids limits over its API and silently drops them; seen on podman 4.3.1)."""

from __future__ import annotations

import pytest

from swerl_cli.core.errors import SandboxError
from swerl_cli.sandbox import podman


class _Response:
    def __init__(self, rootless: bool, cgroups: str):
        self.info = {"host": {"security": {"rootless": rootless}, "cgroupVersion": cgroups}}

    def json(self) -> dict:
        return self.info


class _Api:
    """The two calls of podman's libpod API that check_limits makes, answering as a given host."""

    def __init__(self, rootless: bool, cgroups: str):
        self.response = _Response(rootless, cgroups)

    def _url(self, path: str) -> str:
        return path

    def _get(self, url: str, timeout: float) -> _Response:
        assert url == "/libpod/info"
        return self.response

    def _raise_for_status(self, res: _Response) -> None:
        pass


class _Client:
    def __init__(self, rootless: bool, cgroups: str):
        self.api = _Api(rootless, cgroups)


@pytest.mark.parametrize(("rootless", "cgroups"), [(False, "v1"), (False, "v2"), (True, "v2")])
def test_podman_that_enforces_limits_is_accepted(rootless: bool, cgroups: str) -> None:
    podman.check_limits(_Client(rootless, cgroups), f"unix:///test/{rootless}-{cgroups}.sock")


def test_rootless_podman_on_cgroups_v1_is_refused_with_the_remedy() -> None:
    with pytest.raises(SandboxError, match="rootless on cgroups v1.*SWERL_PODMAN_NO_LIMITS=1"):
        podman.check_limits(_Client(True, "v1"), "unix:///test/rootless-v1.sock")


def test_podman_socket_defaults_follow_the_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWERL_PODMAN_URL", raising=False)
    monkeypatch.delenv("CONTAINER_HOST", raising=False)
    monkeypatch.setattr(podman.os, "geteuid", lambda: 1234)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1234")
    assert podman.default_url() == "unix:///run/user/1234/podman/podman.sock"
    monkeypatch.setattr(podman.os, "geteuid", lambda: 0)
    assert podman.default_url() == "unix:///run/podman/podman.sock"
    monkeypatch.setenv("CONTAINER_HOST", "unix:///elsewhere.sock")
    assert podman.default_url() == "unix:///elsewhere.sock"
