"""`CollectConfig`: every setting of `swerl collect`, validated on construction.

Its constructor takes one argument per flag. The policy's options among them (`--model`, `--base-url`, ...) are
not kept as fields: they are `InitVar`s that fill `policy_options`, the named backend's own `Options` (built once,
here), so the config holds the policy as a name and a section: `cfg.policy`, `cfg.policy_options`. Being no
fields, they cannot be changed by `dataclasses.replace` (which fails on them): build a new config instead.
"""

from __future__ import annotations

import dataclasses
from dataclasses import InitVar, dataclass, field
from typing import Any

from swerl_cli.agent.loop import AgentSettings
from swerl_cli.collect.policy_section import check_policy_options, flatten_policy, policy_section
from swerl_cli.core.config import check_positive, flag, init_fields
from swerl_cli.core.errors import ConfigError
from swerl_cli.executor import JobSettings
from swerl_cli.policy import BACKENDS as POLICIES
from swerl_cli.policy import DEFAULT_POLICY, OPTION, PolicyOptions, option_field
from swerl_cli.policy.base import Sampling
from swerl_cli.sandbox import BACKENDS, DEFAULT_BACKEND, SandboxBackend, from_config, one_of
from swerl_cli.sandbox.local import REPO_DIR_HELP

ACTION_FORMATS = ("text", "tools")
EDIT_CHECKS = ("syntax", "off")
# The agent and sampling defaults come from the classes that own them.
_AGENT = AgentSettings()
_SAMPLING = Sampling()


def _subset(cls: type, source: Any) -> Any:
    """Build dataclass `cls` from the same-named fields of `source`."""
    return cls(**{f.name: getattr(source, f.name) for f in dataclasses.fields(cls) if hasattr(source, f.name)})


@dataclass(frozen=True, slots=True)
class CollectConfig(JobSettings):
    """Everything `swerl collect` needs; flags are the kebab-case twins of these fields."""

    # Fields with `flag(...)` are flags of `swerl collect`, in this order in its --help; the rest are YAML only.
    policy: str = flag(
        DEFAULT_POLICY, f"Policy backend: {', '.join(POLICIES)} (the default, {DEFAULT_POLICY}, needs --base-url)."
    )
    # The policy options (InitVars: they fill `policy_options`); each one's default and help are the backends' own
    # (`policy.option_field`); YAML may also group them as `policy: {name: vllm, tensor_parallel_size: 2}`
    # (collect/policy_section.py).
    model: InitVar[str | None] = option_field("model")
    base_url: InitVar[tuple[str, ...]] = option_field("base_url")
    replay: InitVar[str | None] = option_field("replay")
    gold_mistakes: InitVar[float] = option_field("gold_mistakes")
    policy_version: InitVar[str | None] = option_field("policy_version")
    samples: int = flag(1, "Samples per task (the group size G).")
    concurrency: int = flag(4, "Episodes running at once.")
    prefetch: int | None = flag(None, "Sandboxes started ahead for queued episodes (default: --concurrency; 0 = off).")
    run: str = flag("run0", "Run name recorded in every trajectory (ids are instance/run/sample).")
    shard: str | None = flag(None, "Only tasks i, i+n, ... of the input: i/n.")
    max_turns: int = flag(_AGENT.max_turns, "Assistant turns per episode (paper: 40, then 80).")
    max_context_tokens: int = flag(_AGENT.max_context_tokens, "Context budget in tokens (paper: 65536 / 131072).")
    command_timeout_s: float = flag(_AGENT.command_timeout_s, "Time limit of one command in the sandbox.")
    episode_timeout_s: float = flag(_AGENT.episode_timeout_s, "Wall-time limit of one episode.")
    max_observation_chars: int = flag(_AGENT.max_observation_chars, "Observations longer than this are cut.")
    max_format_errors: int = flag(_AGENT.max_format_errors, "Consecutive format errors that end an episode.")
    action_format: str = flag(_AGENT.action_format, "text (```command blocks, the paper's) or tools (native).")
    edit_check: str = flag(
        _AGENT.edit_check,
        "syntax: the editor refuses an edit that leaves a compiling .py file with a syntax error, and says why "
        "(SWE-agent's linting editor); off: every edit is applied.",
    )
    demo: bool = flag(_AGENT.demo, "Add the one-shot demonstration (RFT data).")
    prompt_config: str | None = flag(None, "Prompt YAML file (default: the packaged paper-style one).")
    temperature: float = flag(_SAMPLING.temperature, "Sampling temperature (1.0: unbiased).")
    top_p: float = flag(_SAMPLING.top_p, "Nucleus cut (1.0 = off; < 1 marks the run biased).")
    top_k: int = flag(_SAMPLING.top_k, "Top-k cut (-1 = off).")
    min_p: float = flag(_SAMPLING.min_p, "Min-p cut (0 = off).")
    repetition_penalty: float = flag(_SAMPLING.repetition_penalty, "Repetition penalty (1.0 = off).")
    max_new_tokens: int = flag(_SAMPLING.max_new_tokens, "Tokens per assistant turn.")
    seed: int | None = flag(_SAMPLING.seed, "Base sampling seed (sample s uses seed + s).")
    sandbox: str = flag(DEFAULT_BACKEND, f"Sandbox backend: {one_of()}.")
    repo_dir: str | None = flag(None, REPO_DIR_HELP, metavar="DIR")
    network: bool = flag(False, "Give sandboxes network access.")
    # None: the image's USER (swerl-built images: unprivileged `swerl`)
    sandbox_user: str | None = flag(
        None,
        "Episode user (default: the image's, unprivileged `swerl` in images swerl builds; root is an explicit choice).",
        metavar="USER",
    )
    request_timeout_s: InitVar[float] = option_field("request_timeout_s")
    max_retries: InitVar[int] = option_field("max_retries")
    device: InitVar[str] = option_field("device")
    dtype: InitVar[str] = option_field("dtype")  # the sampler's (hf, vllm)
    tensor_parallel_size: InitVar[int] = option_field("tensor_parallel_size")
    gpu_memory_utilization: InitVar[float] = option_field("gpu_memory_utilization")
    api_key: InitVar[str | None] = option_field("api_key")
    # vllm_engine_args: any other AsyncEngineArgs field
    vllm_engine_args: InitVar[dict[str, Any] | None] = option_field("vllm_engine_args")
    vllm_extras: InitVar[bool] = option_field("vllm_extras")
    backoff_s: InitVar[float] = option_field("backoff_s")
    window: int = _AGENT.window
    memory_mb: int = 4096
    cpus: float = 1.0
    # registry, pull, image_budget_gb, ray, episode_* and max_episode_retries: JobSettings
    # The backend `sandbox` names, built once from its options (the fields of their names: repo_dir, registry, ...)
    # when the config is; every episode, on this machine or a cluster's, gets it with the config.
    sandbox_backend: SandboxBackend = field(init=False, repr=False, compare=False)
    # The backend `policy` names has these options: the policy options given (the InitVars above) that it has, and
    # the collect settings it reads (vllm: concurrency, max_context_tokens); built once, shipped with the config.
    policy_options: PolicyOptions = field(init=False)

    def __post_init__(self, *given: Any) -> None:
        self.check_job_settings()
        for name in (
            "samples",
            "concurrency",
            "max_turns",
            "max_context_tokens",
            "max_format_errors",
            "max_new_tokens",
            "window",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"field '{name}': must be >= 1, got {getattr(self, name)}")
        options = dict(zip(POLICY_OPTIONS, given, strict=True))  # the policy options, by name
        check_policy_options(options)
        if self.prefetch is not None and self.prefetch < 0:
            raise ConfigError(f"field 'prefetch': must be >= 0 (0 turns it off), got {self.prefetch}")
        if self.edit_check not in EDIT_CHECKS:
            raise ConfigError(f"field 'edit_check': choose 'syntax' or 'off', got {self.edit_check!r}")
        if self.action_format not in ACTION_FORMATS:
            raise ConfigError(
                f"field 'action_format': choose 'text' (the paper's) or 'tools', got {self.action_format!r}"
            )
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.min_p < 0:
            raise ConfigError("sampling: need temperature >= 0, 0 < top_p <= 1 and min_p >= 0")
        for name in ("command_timeout_s", "episode_timeout_s", "cpus"):
            check_positive(name, getattr(self, name))
        if self.memory_mb < 64:
            raise ConfigError(f"field 'memory_mb': must be >= 64; got {self.memory_mb}")
        if self.sandbox not in BACKENDS:
            raise ConfigError(f"field 'sandbox': {self.sandbox!r} is not one of {', '.join(BACKENDS)}")
        object.__setattr__(self, "sandbox_backend", from_config(self))
        if self.policy not in POLICIES:
            raise ConfigError(f"field 'policy': {self.policy!r} is not one of {', '.join(POLICIES)}")
        own = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        object.__setattr__(self, "policy_options", policy_section(self.policy, options, own))
        self.shard_index()

    @classmethod
    def flatten_sections(cls, data: dict[str, Any], source: str) -> dict[str, Any]:
        """A config file's `policy:` section (name + that backend's options) as the flat fields it stands for."""
        return flatten_policy(data, source, {f.name for f in init_fields(cls)})

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


# The policy options the constructor takes, in its order; they are no attributes (`cfg.model` is an AttributeError,
# not the default: read `cfg.policy_options`), so their class-level defaults go.
POLICY_OPTIONS = tuple(f.name for f in init_fields(CollectConfig) if f.metadata.get(OPTION))
for _name in POLICY_OPTIONS:
    delattr(CollectConfig, _name)
