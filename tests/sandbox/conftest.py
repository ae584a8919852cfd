"""Session fixtures: the toy task image (built once, with the fix reachable in every git corner)."""

from __future__ import annotations

import pytest

from swerl_cli.streams.records import Located, Task
from tests.sandbox.toy import toy_task


@pytest.fixture(scope="session")
def toy(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The toy task record; its image `swerl-test-toy:dirty` is built on first use (network none)."""
    from swerl_cli.sandbox.build import build_image

    rec = toy_task(tmp_path_factory.mktemp("toy"), "swerl-test-toy:dirty")
    build_image(Task.from_json(Located("toy", 1, rec)), hygiene=False)
    return rec


@pytest.fixture(scope="session")
def toy_t(toy: dict) -> Task:
    """The toy task as a Task."""
    return Task.from_json(Located("toy", 1, toy))


@pytest.fixture(scope="session")
def toy_podman(toy: dict) -> Task:
    """The toy task with its image built in podman's store (`tasks build --sandbox podman`'s code path)."""
    from swerl_cli.sandbox.build import build_image

    task = Task.from_json(Located("toy", 1, toy))
    build_image(task, hygiene=False, sandbox="podman")
    return task
