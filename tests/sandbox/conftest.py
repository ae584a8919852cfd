"""Session fixtures: the toy task image (built once, with the fix reachable in every git corner); and the sandbox
backend a plugin would add, registered as a plugin registers it (the contract suite runs over the registry)."""

from __future__ import annotations

import pytest

from swerl_cli.sandbox import register_backend
from swerl_cli.streams.records import Located, Task
from tests.sandbox.engines import DOCKER
from tests.sandbox.toy import toy_task

register_backend("scratch", "tests.sandbox.plugin_backend:ScratchBackend")  # the "where to add a sandbox" proof


@pytest.fixture(scope="session")
def toy(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The toy task record; its image `swerl-test-toy:dirty` is built on first use (network none)."""
    from swerl_cli.sandbox.build import build_image

    rec = toy_task(tmp_path_factory.mktemp("toy"), "swerl-test-toy:dirty")
    build_image(Task.from_json(Located("toy", 1, rec)), DOCKER, hygiene=False)
    return rec


@pytest.fixture(scope="session")
def toy_t(toy: dict) -> Task:
    """The toy task as a Task."""
    return Task.from_json(Located("toy", 1, toy))
