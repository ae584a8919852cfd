"""A sandbox backend defined outside swerl (tests/sandbox/test_contract.py registers it as `scratch` and runs the
contract suite on it): the two files "where to add a sandbox" touches are this module and one registration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swerl_cli.sandbox import Sandbox, SandboxBackend, SandboxLimits
from swerl_cli.sandbox.local import LocalSandbox
from swerl_cli.streams.records import Task


@dataclass(frozen=True, slots=True)
class ScratchConfig:
    """Where the task repositories are."""

    repo_dir: str | None = None

    @classmethod
    def from_options(cls, repo_dir: str | None = None, **options: Any) -> ScratchConfig:
        return cls(repo_dir=repo_dir)


class ScratchBackend(SandboxBackend):
    """Each sandbox a fresh clone under a temporary directory, reached through a pipe to bash."""

    name = "scratch"
    uses_images = False
    Config = ScratchConfig

    def start(
        self, task: Task, limits: SandboxLimits | None, run_id: str | None, env: dict[str, str] | None
    ) -> Sandbox:
        return LocalSandbox(task, limits, run_id, env, repo_dir=self.config.repo_dir)
