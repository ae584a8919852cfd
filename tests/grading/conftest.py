"""Grading fixtures: reuse the toy task; load and build the example tasks once per session."""

from __future__ import annotations

import orjson
import pytest

from swerl_cli.streams.records import Located, Task
from tests.conftest import EXAMPLES
from tests.sandbox.conftest import toy, toy_t  # noqa: F401 - re-exported fixtures
from tests.sandbox.engines import DOCKER


@pytest.fixture(scope="session")
def example_tasks() -> list[dict]:
    """Every bundled example task, images built if absent (cached by name)."""
    from swerl_cli.sandbox.build import build_image

    tasks = []
    for name in ("tasks.jsonl", "toy-tasks.jsonl"):
        path = EXAMPLES / name
        if path.exists():
            tasks += [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    if not tasks:
        pytest.skip("examples/tasks.jsonl is missing")
    for i, rec in enumerate(tasks):
        build_image(Task.from_json(Located("examples", i + 1, rec)), DOCKER)
    return tasks
