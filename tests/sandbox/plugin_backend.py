"""A sandbox backend defined outside swerl (tests/sandbox/conftest.py registers it as `scratch`; the contract suite,
parametrized over the registry, runs on it unchanged): "where to add a sandbox" is this module and one registration."""

from __future__ import annotations

from swerl_cli.sandbox import Sandbox, SandboxBackend, SandboxLimits
from swerl_cli.sandbox.local import LocalOptions, LocalSandbox
from swerl_cli.streams.records import Task


class ScratchBackend(SandboxBackend):
    """Each sandbox a fresh clone under a temporary directory, reached through a pipe to bash."""

    name = "scratch"
    uses_images = False
    Options = LocalOptions  # its one option is the local backend's: where the task repositories are (--repo-dir)

    def start(
        self, task: Task, limits: SandboxLimits | None, run_id: str | None, env: dict[str, str] | None
    ) -> Sandbox:
        return LocalSandbox(task, limits, run_id, env, repo_dir=self.options.repo_dir)
