"""How an option reaches a sandbox backend: the config's fields of the backend's option names, then
`--sandbox-option KEY=VALUE` for an option with no flag of its own (sandbox/options.py), typed by the backend's own
`Options` and refused in one line when the backend lacks it. No engine needed."""

from __future__ import annotations

import pytest

from swerl_cli.core.config import resolve_config
from swerl_cli.core.errors import ConfigError, UsageError
from swerl_cli.grading.config import GradeConfig
from swerl_cli.sandbox import open_sandbox
from swerl_cli.sandbox.engine import DockerOptions
from swerl_cli.sandbox.options import parse
from swerl_cli.sandbox.podman import PodmanOptions
from swerl_cli.streams.records import Located, Task
from tests.sandbox.toy import toy_task


def test_a_plugin_backends_own_option_reaches_it_through_a_commands_flags(tmp_path, monkeypatch) -> None:
    """The out-of-tree `scratch` backend (tests/sandbox/plugin_backend.py) declares `label`; no command names it."""
    from swerl_cli.sandbox import local

    monkeypatch.setattr(local, "_warned", True)
    task = Task.from_json(Located("t", 1, toy_task(tmp_path, "unused")))
    flags = {"sandbox": "scratch", "repo_dir": str(tmp_path / "repo"), "sandbox_option": ("label=ci-7",)}
    cfg = resolve_config(GradeConfig, None, **flags)  # what `swerl grade --sandbox scratch ...` resolves
    assert cfg.sandbox_backend.options.label == "ci-7"
    assert cfg.sandbox_backend.options.repo_dir == str(tmp_path / "repo")
    with open_sandbox(task, cfg.sandbox_backend, hygiene=False) as sb:
        assert sb.run("echo $SWERL_SCRATCH").output == "ci-7\n"


def test_items_are_typed_by_the_backends_own_options() -> None:
    assert parse("podman", PodmanOptions, ["nofile=2048", "allow-no-limits=yes", "engine_url=unix:///x.sock"]) == {
        "nofile": 2048,
        "allow_no_limits": True,
        "engine_url": "unix:///x.sock",
    }
    assert parse("docker", DockerOptions, ["engine_url=none"]) == {"engine_url": None}


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["namespace=ci"], "the docker backend has no option 'namespace' (its options: registry, pull, "),
        (["engine_url"], "expected KEY=VALUE, got 'engine_url'"),
        (["registry=m.local:5000/x"], "registry is a setting of its own; use --registry"),
    ],
)
def test_a_bad_item_is_one_config_error_naming_the_field(items: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match="^field 'sandbox_option': " + message.replace("(", r"\(")):
        parse("docker", DockerOptions, items, own={"registry"})


def test_a_bad_value_is_a_usage_error_as_a_flag() -> None:
    with pytest.raises(UsageError, match=r"field 'sandbox_option': nofile='many': expected a value of type int"):
        resolve_config(GradeConfig, None, sandbox="podman", sandbox_option=("nofile=many",))
