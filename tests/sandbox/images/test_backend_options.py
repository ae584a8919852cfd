"""The image settings (mirror, pull policy, disk budget) are the image backend's own options: a backend built from a
command's options carries them, two backends in one process keep their own (there is no process-wide setting), a
cluster's worker gets them with the pickled backend, and the sandbox start, the pull-ahead and `tasks pull` take them
from the backend. No engine needed."""

from __future__ import annotations

import pickle

import pytest

from swerl_cli.core.errors import ConfigError, SandboxError
from swerl_cli.sandbox import create, images


def test_docker_backend_built_from_options_carries_the_image_settings() -> None:
    backend = create("docker", registry="mirror.local:5000/ns", pull=False, image_budget_gb=2.5, repo_dir="/x")
    s = backend.image_settings()  # type: ignore[attr-defined]
    assert (s.registry, s.pull, s.budget_gb) == ("mirror.local:5000/ns", False, 2.5)
    assert backend.resolve_image("org/img:1") == "mirror.local:5000/ns/img:1"
    plain = create("docker")  # another backend of the same process: the defaults, untouched by the first
    assert (plain.image_settings().registry, plain.image_settings().pull) == (None, True)  # type: ignore[attr-defined]
    assert plain.resolve_image("org/img") == "org/img:latest"  # no mirror: the name as given, tag spelled out
    assert not hasattr(images, "SETTINGS")
    assert not hasattr(images, "configure")


def test_podman_backend_reads_the_same_options_and_its_socket_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("SWERL_PODMAN_URL", "unix:///tmp/swerl-test-podman.sock")
    backend = create("podman", registry="mirror.local:5000/ns", image_budget_gb=1.0)
    assert backend.options.engine_url == "unix:///tmp/swerl-test-podman.sock"
    assert (backend.options.registry, backend.options.image_budget_gb, backend.options.pull) == (
        "mirror.local:5000/ns",
        1.0,
        True,
    )


def test_commands_configs_build_their_backend_once_with_their_image_flags() -> None:
    from swerl_cli.collect.config import CollectConfig
    from swerl_cli.grading.config import GradeConfig

    for cfg in (
        CollectConfig(policy="gold", sandbox="podman", registry="m.local:5000/a", pull=False),
        GradeConfig(sandbox="podman", registry="m.local:5000/a", pull=False),
    ):
        backend = cfg.sandbox_backend
        assert backend.name == "podman"
        assert (backend.options.registry, backend.options.pull) == ("m.local:5000/a", False)
        assert cfg.sandbox_backend is backend  # built once, with the config


def test_a_pickled_backend_keeps_its_options_and_leaves_its_log_behind() -> None:
    logs: list[str] = []
    backend = create("docker", registry="mirror.local:5000/ns", pull=False, log=logs.append)
    assert backend.image_settings().log is not None  # type: ignore[attr-defined]
    shipped = pickle.loads(pickle.dumps(backend))  # what a Ray worker receives
    assert shipped.options == backend.options
    assert shipped.log is None


def test_a_bad_image_option_is_a_config_error_naming_its_field() -> None:
    with pytest.raises(ConfigError, match="image_budget_gb"):
        create("docker", image_budget_gb=0.0)
    with pytest.raises(ConfigError, match="registry"):
        create("podman", registry="not a registry!")


def test_the_sandbox_start_pulls_under_the_backends_own_settings(monkeypatch) -> None:
    """A missing image with `pull=False` on the backend is the start's one-line error naming --no-pull."""
    import docker

    class _Images:
        def get(self, image: str) -> None:
            raise docker.errors.ImageNotFound(image)

    class _Client:
        images = _Images()

    backend = create("docker", registry="mirror.local:5000/ns", pull=False)
    monkeypatch.setattr(type(backend), "client", lambda self: _Client())
    with pytest.raises(SandboxError, match=r"mirror.local:5000/ns/img:1 is not present locally and pulls are off"):
        backend.ensure_image(backend.resolve_image("org/img:1"))
