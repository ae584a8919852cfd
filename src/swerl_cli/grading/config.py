"""`GradeConfig`: how `swerl grade` and `tasks validate` run tests; its flag fields are their options. Kept light
(no grading machinery) because building the `tasks` commands reads it."""

from __future__ import annotations

from dataclasses import dataclass, field

from swerl_cli.core.config import check_positive, flag
from swerl_cli.core.errors import ConfigError
from swerl_cli.executor import JobSettings
from swerl_cli.sandbox import BACKENDS, DEFAULT_BACKEND, SandboxBackend, SandboxLimits, from_config, one_of
from swerl_cli.sandbox.local import REPO_DIR_HELP

MODES = ("strict", "harness")


@dataclass(frozen=True, slots=True)
class GradeConfig(JobSettings):
    """How `swerl grade` runs tests: sandbox backend, limits, timeout, parallelism (fields = flags)."""

    workers: int = flag(1, "Sandboxes graded in parallel.", metavar="N")
    mode: str = flag(
        "strict",
        "strict: only `git apply`, a refused patch scores 0 (reason patch_failed), and so does a finding of the "
        "static audit of the patch (reason tampering_suspected); harness: SWE-bench's fallbacks (git apply --3way, "
        "GNU patch --fuzz=5), status patch_failed, audit findings recorded only.",
        metavar="MODE",
    )
    timeout_s: float = flag(1800.0, "test_cmd timeout in seconds.", metavar="S")
    sandbox: str = flag(DEFAULT_BACKEND, f"Sandbox backend: {one_of()}.")
    repo_dir: str | None = flag(None, REPO_DIR_HELP, metavar="DIR")
    run_id: str | None = flag(None, "Label for this run's containers [default: generated].")
    memory_mb: int = flag(4096, "Memory limit per sandbox in MiB.")
    cpus: float = flag(1.0, "CPU limit per sandbox.")
    network: bool = flag(False, "Give sandboxes a network.")
    # None: the repository's owner in the image (swerl-built images: `swerl`), nobody when root owns it
    sandbox_user: str | None = flag(
        None,
        "User the tests run as; the grader's side stays root [default: the repository's owner, nobody when root "
        "owns it; root is explicit and gives up the separation].",
        metavar="USER",
    )
    pids: int = 1024
    log_tail_chars: int = 4000
    # registry, pull, image_budget_gb, ray, episode_* and max_episode_retries: JobSettings
    # The backend `sandbox` names, built once from its options (the fields of their names: repo_dir, registry, ...)
    # when the config is; every grading job gets it with the config.
    sandbox_backend: SandboxBackend = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.check_job_settings()
        if self.mode not in MODES:
            raise ConfigError(f"field 'mode': {self.mode!r} is not one of {', '.join(MODES)}")
        if self.sandbox not in BACKENDS:
            raise ConfigError(f"field 'sandbox': {self.sandbox!r} is not one of {', '.join(BACKENDS)}")
        object.__setattr__(self, "sandbox_backend", from_config(self))
        check_positive("timeout_s", self.timeout_s)
        check_positive("cpus", self.cpus)
        if not 1 <= self.workers <= 256:
            raise ConfigError(f"field 'workers': must be between 1 and 256; got {self.workers}")
        if self.memory_mb < 64 or self.cpus <= 0 or self.pids < 16:
            raise ConfigError("limits: memory_mb >= 64, cpus > 0 and pids >= 16 are required")

    def limits(self) -> SandboxLimits:
        """The sandbox limits this config implies."""
        return SandboxLimits(
            memory_mb=self.memory_mb, cpus=self.cpus, pids=self.pids, network=self.network, user=self.sandbox_user
        )
