"""`CollectConfig`: every setting of `swerl collect`, flat (one field per flag), validated on construction."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from swerl_cli.agent.loop import AgentSettings
from swerl_cli.core.config import check_positive
from swerl_cli.core.errors import ConfigError
from swerl_cli.executor import JobSettings
from swerl_cli.policy import DEFAULT_POLICY
from swerl_cli.policy.base import Sampling
from swerl_cli.policy.engine_size import DTYPES
from swerl_cli.sandbox import BACKENDS, DEFAULT_BACKEND

ACTION_FORMATS = ("text", "tools")
# The agent and sampling defaults come from the classes that own them.
_AGENT = AgentSettings()
_SAMPLING = Sampling()


def _subset(cls: type, source: Any) -> Any:
    """Build dataclass `cls` from the same-named fields of `source`."""
    return cls(**{f.name: getattr(source, f.name) for f in dataclasses.fields(cls) if hasattr(source, f.name)})


@dataclass(frozen=True, slots=True)
class CollectConfig(JobSettings):
    """Everything `swerl collect` needs; flags are the kebab-case twins of these fields."""

    policy: str = DEFAULT_POLICY
    model: str | None = None
    base_url: tuple[str, ...] = ()
    api_key: str | None = None
    replay: str | None = None
    policy_version: str | None = None
    device: str = "cpu"
    dtype: str = "auto"  # the sampler's (hf, vllm): auto = the trainer's (fp32 on CPU, bf16 on CUDA)
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    vllm_engine_args: dict[str, Any] | None = None  # any other AsyncEngineArgs field (YAML only)
    vllm_extras: bool = True
    request_timeout_s: float = 600.0
    max_retries: int = 5
    backoff_s: float = 1.0
    samples: int = 1
    concurrency: int = 4
    prefetch: int | None = None
    run: str = "run0"
    shard: str | None = None
    max_turns: int = _AGENT.max_turns
    max_context_tokens: int = _AGENT.max_context_tokens
    command_timeout_s: float = _AGENT.command_timeout_s
    episode_timeout_s: float = _AGENT.episode_timeout_s
    max_observation_chars: int = _AGENT.max_observation_chars
    max_format_errors: int = _AGENT.max_format_errors
    window: int = _AGENT.window
    action_format: str = _AGENT.action_format
    demo: bool = _AGENT.demo
    prompt_config: str | None = None
    temperature: float = _SAMPLING.temperature
    top_p: float = _SAMPLING.top_p
    top_k: int = _SAMPLING.top_k
    min_p: float = _SAMPLING.min_p
    repetition_penalty: float = _SAMPLING.repetition_penalty
    max_new_tokens: int = _SAMPLING.max_new_tokens
    seed: int | None = _SAMPLING.seed
    sandbox: str = DEFAULT_BACKEND
    sandbox_user: str | None = None  # None: the image's USER (swerl-built images: unprivileged `swerl`)
    memory_mb: int = 4096
    cpus: float = 1.0
    network: bool = False
    # registry, pull, image_budget_gb, ray, episode_* and max_episode_retries: JobSettings

    def __post_init__(self) -> None:
        self.check_job_settings()
        for name in (
            "samples",
            "concurrency",
            "max_turns",
            "max_context_tokens",
            "max_format_errors",
            "max_new_tokens",
            "window",
            "tensor_parallel_size",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"field '{name}': must be >= 1, got {getattr(self, name)}")
        if self.prefetch is not None and self.prefetch < 0:
            raise ConfigError(f"field 'prefetch': must be >= 0 (0 turns it off), got {self.prefetch}")
        if self.dtype not in DTYPES:
            raise ConfigError(f"field 'dtype': choose one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.action_format not in ACTION_FORMATS:
            raise ConfigError(
                f"field 'action_format': choose 'text' (the paper's) or 'tools', got {self.action_format!r}"
            )
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.min_p < 0:
            raise ConfigError("sampling: need temperature >= 0, 0 < top_p <= 1 and min_p >= 0")
        for name in ("command_timeout_s", "episode_timeout_s", "request_timeout_s", "cpus"):
            check_positive(name, getattr(self, name))
        for name in ("max_retries", "backoff_s"):
            check_positive(name, getattr(self, name), zero_ok=True)
        if self.memory_mb < 64:
            raise ConfigError(f"field 'memory_mb': must be >= 64; got {self.memory_mb}")
        if self.sandbox not in BACKENDS:
            raise ConfigError(f"field 'sandbox': {self.sandbox!r} is not one of {', '.join(BACKENDS)}")
        self.shard_index()

    def shard_index(self) -> tuple[int, int] | None:
        """(i, n) from `--shard i/n`, or None."""
        if self.shard is None:
            return None
        i, sep, n = self.shard.partition("/")
        if not sep or not i.isdigit() or not n.isdigit() or int(n) < 1 or int(i) >= int(n):
            raise ConfigError(f"field 'shard': expected i/n with 0 <= i < n (e.g. 0/4), got {self.shard!r}")
        return int(i), int(n)

    def lookahead(self) -> int:
        """Sandboxes started ahead for queued episodes (`prefetch`, default: one per concurrent episode)."""
        return self.concurrency if self.prefetch is None else self.prefetch

    def sampling(self) -> Sampling:
        """The sampling parameters sent with every request."""
        return _subset(Sampling, self)

    def agent(self) -> AgentSettings:
        """The episode limits and format."""
        return _subset(AgentSettings, self)

    def sandbox_limits(self) -> Any:
        """The resource limits of every episode's sandbox."""
        from swerl_cli.sandbox import SandboxLimits

        return SandboxLimits(memory_mb=self.memory_mb, cpus=self.cpus, network=self.network, user=self.sandbox_user)
