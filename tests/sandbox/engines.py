"""The engine backends the tests start sandboxes with, each built once, as a command builds its own."""

from __future__ import annotations

from swerl_cli.sandbox import create

DOCKER = create("docker")  # the default engine (DOCKER_HOST or its socket), default options
