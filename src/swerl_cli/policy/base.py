"""The Policy protocol: chat messages in, one sampled completion out (docs/policies.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from swerl_cli.core.errors import PolicyError
from swerl_cli.core.plugins import Options
from swerl_cli.policy.tokens import TokenState


@dataclass(frozen=True, slots=True)
class Sampling:
    """Sampling parameters, sent explicitly so server-side generation-config defaults cannot leak in.

    The paper's RL setting is the default: temperature 1.0 and every truncation off.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    max_new_tokens: int = 4096
    seed: int | None = None
    stop: tuple[str, ...] = ()

    @property
    def is_biased(self) -> bool:
        """True when decoding truncates or reshapes the distribution (invalidates the PPO/DAPO ratio)."""
        return bool(biased_parameters(self.to_json()))

    def to_json(self) -> dict[str, Any]:
        """The `policy.sampling` record field."""
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "min_p": self.min_p,
            "repetition_penalty": self.repetition_penalty,
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
        }


# The one rule for "was sampling biased": any of these away from its neutral value truncates or reshapes the
# distribution the tokens were drawn from, so the trainer's importance ratio would be wrong (paper section 5.2).
_BIASING = (
    ("temperature", lambda v: v != 1.0),
    ("top_p", lambda v: v < 1.0),
    ("top_k", lambda v: v not in (-1, 0)),
    ("min_p", lambda v: v > 0.0),
    ("repetition_penalty", lambda v: v != 1.0),
)


def biased_parameters(sampling: dict[str, Any]) -> list[str]:
    """The `name=value` of each parameter of a `policy.sampling` record field that biases decoding.

    >>> biased_parameters({"temperature": 1.0, "top_p": 0.9, "top_k": -1})
    ['top_p=0.9']
    """
    bad = []
    for key, is_biased in _BIASING:
        v = sampling.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and is_biased(v):
            bad.append(f"{key}={v}")
    return bad


@dataclass(slots=True)
class Completion:
    """One sampled assistant turn; token ids and logprobs are exactly what the sampler produced, when known."""

    text: str
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    finish_reason: str = "stop"
    prompt_token_ids: list[int] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    # Token-in/token-out turns (after turn 0): the ids between the previous turn's sampled ids and this prompt's
    # end (closing tokens first, `n_closing` of them, then the new messages); prompt_token_ids is then None.
    delta_token_ids: list[int] | None = None
    n_closing: int = 0
    # The policy version that sampled this turn, when the backend knows it per turn (an openai policy with
    # `--policy-version server` reads it from the server); `policy_version_end` only when it changed mid-request.
    policy_version: str | None = None
    policy_version_end: str | None = None
    # A scripted demonstration's deliberate mistake (gold-steps with mistakes): the turn record says `masked`, and
    # training gives its tokens loss mask 0, so the model learns the recovery that follows, not the mistake.
    masked: bool = False


@dataclass(frozen=True, slots=True)
class EpisodeInfo:
    """What a policy may know about the episode it serves (gold and replay need the task and the sample)."""

    instance_id: str
    sample: int
    run: str
    task: dict[str, Any]
    max_context_tokens: int | None = None
    # The conversation as tokens, kept by a token-in/token-out backend between this episode's turns.
    tokens: TokenState = field(default_factory=lambda: TokenState(), compare=False, hash=False, repr=False)


class ContextLimitError(PolicyError):
    """The prompt no longer fits the model's context: the episode ends with exit_status `context_limit`."""


def reply_budget(n_prompt: int, sampling: Sampling, max_context: int | None) -> int:
    """Tokens the next reply may take: `max_new_tokens`, capped by what is left of the context budget.

    Raises ContextLimitError when the prompt alone fills the budget (local backends know the prompt length).
    """
    if max_context is None:
        return sampling.max_new_tokens
    if n_prompt >= max_context:
        raise ContextLimitError(f"prompt of {n_prompt} tokens fills the context of {max_context}")
    return min(sampling.max_new_tokens, max_context - n_prompt)


def assistant_turns(messages: list[dict[str, Any]]) -> int:
    """How many assistant turns `messages` holds: the index of the turn a scripted backend plays next."""
    return sum(1 for m in messages if m.get("role") == "assistant")


def identity(backend: str, model: str, version: str | None = None) -> dict[str, Any]:
    """The `policy` record's first fields: the backend, the model, and its version (the model's unless set)."""
    return {"backend": backend, "model": model, "version": version or model}


@runtime_checkable
class Policy(Protocol):
    """Anything that completes a chat: an OpenAI-compatible server, vLLM offline, transformers, gold, replay.

    `acomplete` is a coroutine so one process drives many episodes; local backends run their model in a thread.
    `describe()` returns the `policy` record fields it owns (backend, model, version, base_urls...).
    The backends `--policy` names are `PolicyBackend` subclasses (below); tests may pass any object of this shape.
    """

    name: str

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        sampling: Sampling,
        *,
        tools: list[dict[str, Any]] | None = None,
        episode: EpisodeInfo | None = None,
    ) -> Completion: ...

    def describe(self) -> dict[str, Any]: ...

    async def aclose(self) -> None: ...


_B = TypeVar("_B", bound="PolicyBackend")


@dataclass(frozen=True, slots=True)
class PolicyOptions(Options):
    """A backend's own options: a frozen dataclass whose fields are named like the user's flags (`model`,
    `base_url`, `policy_version`...), so `from_options` can read them from any command's settings."""

    def input_files(self) -> tuple[str, ...]:
        """Files the backend reads records from (replay's trajectories): the command's inputs too, so its output
        may not overwrite them; none by default."""
        return ()


class PolicyBackend(Policy):
    """One kind of policy, registered by short name in `swerl_cli.policy.BACKENDS` (docs/policies.md).

    It implements the `Policy` protocol (acomplete, describe, aclose). A backend owns its typed `Options` (a
    `PolicyOptions` subclass) and builds itself from them with `create`, which checks what it can before any
    episode (a model directory, an optional package). `distributed` says how it reaches the workers of
    `collect --ray`: `ship` sends the driver's object, `rebuild` builds one per episode on the worker (then
    `spread(key)` spreads episodes over its endpoints), None refuses (a model in this process).
    """

    name = ""
    Options: ClassVar[type[PolicyOptions]] = PolicyOptions
    distributed: ClassVar[str | None] = None

    @classmethod
    def create(cls: type[_B], options: Any) -> _B:
        """The backend configured by `options` (an instance of `cls.Options`)."""
        raise NotImplementedError

    def spread(self, key: int) -> None:
        """Start this episode's choice of endpoint at `key` (backends with several endpoints); nothing otherwise."""


class ScriptedBackend(PolicyBackend):
    """A backend whose every turn is scripted from the episode (gold, replay): `play(episode, turn, tools)` returns
    turn `turn` (the assistant messages so far); `needs` names what it reads from the episode, for the error."""

    needs = "task"

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        sampling: Sampling,
        *,
        tools: list[dict[str, Any]] | None = None,
        episode: EpisodeInfo | None = None,
    ) -> Completion:
        """The scripted action of this episode's next turn."""
        if episode is None:
            raise PolicyError(f"the {self.name} policy needs the episode's {self.needs}")
        return self.respond(episode, messages, tools)

    def respond(
        self, episode: EpisodeInfo, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> Completion:
        """The next turn: `play` of the number of assistant messages so far (a script that reads the observations
        overrides this)."""
        return self.play(episode, assistant_turns(messages), tools)

    def play(self, episode: EpisodeInfo, turn: int, tools: list[dict[str, Any]] | None) -> Completion:
        """Turn `turn` of `episode` (tools: the native tool schemas, or None for the text action format)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Nothing to release."""
