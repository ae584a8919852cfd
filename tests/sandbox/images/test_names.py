"""Image references, the mirror rewrite and the image settings' validation (no engine)."""

from __future__ import annotations

import pytest

from swerl_cli.collect import CollectConfig
from swerl_cli.core.errors import ConfigError
from swerl_cli.grading.grade import GradeConfig
from swerl_cli.sandbox.image_names import mirror, normalize, registry_of
from swerl_cli.sandbox.images import PullConfig


@pytest.mark.parametrize(
    ("image", "registry", "want"),
    [
        (
            "swebench/sweb.eval.x86_64.django_1776_django-16255:latest",
            "m.local:5000/team",
            "m.local:5000/team/sweb.eval.x86_64.django_1776_django-16255:latest",
        ),
        ("swerl-example-memo:2fa5", "127.0.0.1:5000/ns", "127.0.0.1:5000/ns/swerl-example-memo:2fa5"),
        ("docker.io/swebench/x", "127.0.0.1:5000", "127.0.0.1:5000/swebench/x:latest"),
        ("ghcr.io/o/r@sha256:abc", "m:1/n", "m:1/n/r@sha256:abc"),
        ("swebench/x", None, "swebench/x"),
    ],
)
def test_mirror_replaces_host_and_namespace_only(image: str, registry: str | None, want: str) -> None:
    assert mirror(image, registry) == want


def test_normalize_and_registry_of() -> None:
    assert normalize("x") == "x:latest"
    assert normalize("localhost:5000/a/b") == "localhost:5000/a/b:latest"
    assert registry_of("swebench/x:latest") == "docker.io"
    assert registry_of("127.0.0.1:5000/ns/x:1") == "127.0.0.1:5000"


@pytest.mark.parametrize("cls", [CollectConfig, GradeConfig, PullConfig])
def test_image_settings_are_validated_in_every_config(cls) -> None:
    with pytest.raises(ConfigError, match="field 'registry'"):
        cls(registry="http://mirror.local/ns")
    with pytest.raises(ConfigError, match="field 'image_budget_gb'"):
        cls(image_budget_gb=0)
    assert cls(registry="mirror.local:5000/ns", image_budget_gb=1.5).registry == "mirror.local:5000/ns"
