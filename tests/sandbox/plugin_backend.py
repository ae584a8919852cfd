"""A sandbox backend defined outside swerl, with one option of its own (tests/sandbox/conftest.py registers it as
`scratch`; the contract suite, parametrized over the registry, runs on it unchanged): "where to add a sandbox" is
this module and one registration, and its option reaches it as `--sandbox-option label=VALUE` with no edit to any
command (tests/sandbox/test_sandbox_options.py)."""

from __future__ import annotations

from dataclasses import dataclass

from swerl_cli.sandbox import Sandbox, SandboxBackend, SandboxLimits
from swerl_cli.sandbox.local import LocalOptions, LocalSandbox
from swerl_cli.streams.records import Task


@dataclass(frozen=True, slots=True)
class ScratchOptions(LocalOptions):
    """The local backend's option (where the task repositories are: --repo-dir) and one of its own."""

    label: str = "scratch"  # seen by every command in the sandbox as $SWERL_SCRATCH


class ScratchBackend(SandboxBackend):
    """Each sandbox a fresh clone under a temporary directory, reached through a pipe to bash."""

    name = "scratch"
    uses_images = False
    Options = ScratchOptions

    def start(
        self, task: Task, limits: SandboxLimits | None, run_id: str | None, env: dict[str, str] | None
    ) -> Sandbox:
        env = {**(env or {}), "SWERL_SCRATCH": self.options.label}
        return LocalSandbox(task, limits, run_id, env, repo_dir=self.options.repo_dir)
