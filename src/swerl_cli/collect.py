"""`collect_records`: run the agent over tasks x samples with bounded concurrency; one trajectory per episode."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from swerl_cli.agent.loop import AgentSettings, EpisodeResult, initial_messages, run_episode
from swerl_cli.agent.prompts import PromptConfig, load_prompts
from swerl_cli.errors import ConfigError, SwerlError
from swerl_cli.policy import policy_class
from swerl_cli.policy.base import EpisodeInfo, Policy, Sampling
from swerl_cli.records import TRAJECTORY, Located, Task, schema_tag

ACTION_FORMATS = ("text", "tools")
START_PARALLELISM = max(4, os.cpu_count() or 4)  # sandbox starts in flight at once
# CollectConfig is flat (one field per flag); its agent and sampling defaults come from the classes that own them.
_AGENT = AgentSettings()
_SAMPLING = Sampling()


def _subset(cls: type, source: Any) -> Any:
    """Build dataclass `cls` from the same-named fields of `source`."""
    return cls(**{f.name: getattr(source, f.name) for f in dataclasses.fields(cls) if hasattr(source, f.name)})


@dataclass(frozen=True, slots=True)
class CollectConfig:
    """Everything `swerl collect` needs; flags are the kebab-case twins of these fields."""

    policy: str = "openai"
    model: str | None = None
    base_url: tuple[str, ...] = ()
    api_key: str | None = None
    replay: str | None = None
    policy_version: str | None = None
    device: str = "cpu"
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
    sandbox: str = "docker"
    memory_mb: int = 4096
    cpus: float = 1.0
    network: bool = False

    def __post_init__(self) -> None:
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
        if self.action_format not in ACTION_FORMATS:
            raise ConfigError(
                f"field 'action_format': choose 'text' (the paper's) or 'tools', got {self.action_format!r}"
            )
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.min_p < 0:
            raise ConfigError("sampling: need temperature >= 0, 0 < top_p <= 1 and min_p >= 0")
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


def build_policy(cfg: CollectConfig) -> Policy:
    """Instantiate the configured backend (the heavy ones import their libraries lazily)."""
    cls = policy_class(cfg.policy)
    if cfg.policy == "openai":
        return cls(
            cfg.model or "default",
            list(cfg.base_url),
            api_key=cfg.api_key or os.environ.get("OPENAI_API_KEY"),
            request_timeout_s=cfg.request_timeout_s,
            max_retries=cfg.max_retries,
            backoff_s=cfg.backoff_s,
            vllm_extras=cfg.vllm_extras,
            version=cfg.policy_version,
        )
    if cfg.policy == "hf":
        return cls(cfg.model or "", device=cfg.device, version=cfg.policy_version)
    if cfg.policy == "vllm":
        engine = dict(tensor_parallel_size=cfg.tensor_parallel_size, gpu_memory_utilization=cfg.gpu_memory_utilization)
        engine.update(cfg.vllm_engine_args or {})
        return cls(cfg.model or "", version=cfg.policy_version, engine_kwargs=engine)
    if cfg.policy == "replay":
        return cls(cfg.replay or "")
    return cls()


def episode_id(instance_id: str, run: str, sample: int) -> str:
    """`{instance_id}/{run}/{sample}`, the trajectory id."""
    return f"{instance_id}/{run}/{sample}"


def plan_jobs(tasks: Iterable[Located], cfg: CollectConfig, skip_ids: set[str]) -> list[tuple[Located, Task, int]]:
    """Validate tasks, keep this shard's, expand samples (task-major, so groups finish together), drop done ids."""
    shard = cfg.shard_index()
    jobs = []
    for n, loc in enumerate(tasks):
        task = Task.from_json(loc)
        if shard is not None and n % shard[1] != shard[0]:
            continue
        for s in range(cfg.samples):
            if episode_id(task.instance_id, cfg.run, s) not in skip_ids:
                jobs.append((loc, task, s))
    return jobs


class Collector:
    """Runs the planned episodes; `emit(record)` is called in the event loop as each one ends."""

    def __init__(
        self,
        cfg: CollectConfig,
        policy: Policy,
        emit: Callable[[dict[str, Any]], None],
        on_event: Callable[[str, Any], None] | None = None,
        prompts: PromptConfig | None = None,
    ):
        self.cfg, self.policy, self.emit = cfg, policy, emit
        self.on_event = on_event or (lambda kind, payload: None)
        self.prompts = prompts or load_prompts(cfg.prompt_config)
        self.settings = cfg.agent()
        self.sampling = cfg.sampling()
        self._closing: set[asyncio.Future[None]] = set()
        # Removals run in the background, a few at a time: when a wave of episodes ends together, removing every
        # container at once would starve the next wave's first commands of CPU.
        self._removals = asyncio.Semaphore(max(1, (os.cpu_count() or 2) // 2))
        self._starts = asyncio.Semaphore(START_PARALLELISM)
        self._ahead: dict[int, asyncio.Future[Any]] = {}  # job index -> sandbox started ahead by _prefetch
        self._on_demand = 0  # episodes waiting on a sandbox they started themselves
        self._next = 0
        self._moved = asyncio.Event()

    def policy_record(self, sampling: Sampling) -> dict[str, Any]:
        """The trajectory's `policy` field."""
        out = dict(self.policy.describe())
        out.update(
            action_format=self.cfg.action_format, sampling=sampling.to_json(), biased_sampling=sampling.is_biased
        )
        return out

    async def run(self, jobs: list[tuple[Located, Task, int]]) -> None:
        """Run every job with at most `concurrency` episodes at once, starting sandboxes ahead for queued ones."""
        self.on_event("plan", len(jobs))

        async def worker() -> None:
            while self._next < len(jobs):
                i = self._next
                self._next += 1
                self._moved.set()
                self.emit(await self.episode(*jobs[i], starting=self._ahead.pop(i, None)))

        prefetcher = asyncio.ensure_future(self._prefetch(jobs))
        try:
            await asyncio.gather(*(worker() for _ in range(min(self.cfg.concurrency, max(1, len(jobs))))))
        finally:
            prefetcher.cancel()
            for starting in self._ahead.values():  # started for jobs that never ran (interrupt, failure)
                self._closing.add(asyncio.ensure_future(_close_when_started(starting, self._removals)))
            self._ahead.clear()
            await asyncio.gather(prefetcher, *self._closing, return_exceptions=True)
            await self.policy.aclose()

    async def _prefetch(self, jobs: list[tuple[Located, Task, int]]) -> None:
        """Start sandboxes for the next `lookahead` queued jobs, one at a time, only while no episode is waiting
        for its own sandbox: a job handed out finds its container already up instead of queueing behind a burst
        of starts when many episodes end together."""
        lookahead = self.cfg.lookahead()
        while lookahead and self._next < len(jobs):
            window = range(self._next, min(len(jobs), self._next + lookahead))
            todo = next((j for j in window if j not in self._ahead), None)
            if todo is None or self._on_demand:
                self._moved.clear()
                await self._moved.wait()
                continue
            starting = self._start(jobs[todo][1])
            self._ahead[todo] = starting
            await asyncio.wait([starting])

    def _start(self, task: Task) -> asyncio.Future[Any]:
        """Start `task`'s sandbox in a worker thread, at most a few at once: when many episodes start together,
        first come first served gets each one its container sooner than starting all of them in parallel."""
        from swerl_cli.sandbox import SandboxLimits, start_sandbox

        cfg = self.cfg
        limits = SandboxLimits(memory_mb=cfg.memory_mb, cpus=cfg.cpus, network=cfg.network)

        async def start() -> Any:
            async with self._starts:
                return await asyncio.to_thread(start_sandbox, task, backend=cfg.sandbox, limits=limits, run_id=cfg.run)

        return asyncio.ensure_future(start())

    async def episode(
        self, loc: Located, task: Task, sample: int, starting: asyncio.Future[Any] | None = None
    ) -> dict[str, Any]:
        """One episode end to end: sandbox up (or `starting`, begun ahead), agent loop, sandbox down; failures
        become an error record."""
        cfg = self.cfg
        sampling = self.sampling if cfg.seed is None else dataclasses.replace(self.sampling, seed=cfg.seed + sample)
        info = EpisodeInfo(task.instance_id, sample, cfg.run, loc.obj, cfg.max_context_tokens)
        self.on_event("start", (task.instance_id, sample))
        # The sandbox starts in a thread while the first policy request is in flight (it needs no sandbox).
        if starting is None:
            starting = self._start(task)
            self._on_demand += 1
            starting.add_done_callback(self._started_on_demand)
        try:
            result = await run_episode(loc.obj, self.policy, starting, sampling, self.prompts, self.settings, info)
        except SwerlError as e:
            messages = initial_messages(loc.obj, self.prompts, self.settings)
            result = EpisodeResult(messages=messages, exit_status="error", error=f"{type(e).__name__}: {e}")
            result.stats = {
                "turns": 0,
                "format_errors": 0,
                "tokens_prompt": 0,
                "tokens_generated": 0,
                "tokens_total": 0,
                "wall_s": 0.0,
                "sandbox_s": 0.0,
                "policy_s": 0.0,
            }
        finally:
            # Removal happens in the background: the record does not wait for it (run() awaits all of them).
            self._closing.add(asyncio.ensure_future(_close_when_started(starting, self._removals)))
        record = {
            "id": episode_id(task.instance_id, cfg.run, sample),
            "instance_id": task.instance_id,
            "run": cfg.run,
            "sample": sample,
            "task": loc.obj,
            "policy": self.policy_record(sampling),
            "messages": result.messages,
            "turns": result.turns,
            "patch": result.patch,
            "exit_status": result.exit_status,
            "error": result.error,
            "stats": result.stats,
            "schema": schema_tag(TRAJECTORY),
        }
        self.on_event("end", record)
        return record

    def _started_on_demand(self, _: asyncio.Future[Any]) -> None:
        self._on_demand -= 1
        self._moved.set()


async def _close_when_started(starting: asyncio.Future[Any], gate: asyncio.Semaphore) -> None:
    """Remove the sandbox once its start has finished (or do nothing if the start failed)."""
    try:
        sandbox = await asyncio.shield(starting)
    except (SwerlError, asyncio.CancelledError):
        return
    async with gate:
        await asyncio.to_thread(sandbox.close)


def collect_records(
    tasks: Iterable[Located],
    cfg: CollectConfig,
    emit: Callable[[dict[str, Any]], None],
    *,
    skip_ids: set[str] | None = None,
    on_event: Callable[[str, Any], None] | None = None,
    policy: Policy | None = None,
) -> int:
    """Plan and run every episode; returns the number of records emitted. Ctrl-C removes live sandboxes."""
    return run_jobs(plan_jobs(tasks, cfg, skip_ids or set()), cfg, emit, on_event=on_event, policy=policy)


def run_jobs(
    jobs: list[tuple[Located, Task, int]],
    cfg: CollectConfig,
    emit: Callable[[dict[str, Any]], None],
    *,
    on_event: Callable[[str, Any], None] | None = None,
    policy: Policy | None = None,
) -> int:
    """Run jobs from `plan_jobs` (planning first validates the whole input before anything is written)."""
    collector = Collector(cfg, policy or build_policy(cfg), emit, on_event)
    count = 0

    def counted(record: dict[str, Any]) -> None:
        nonlocal count
        emit(record)
        count += 1

    collector.emit = counted

    async def main() -> None:
        loop = asyncio.get_running_loop()
        pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=2 * cfg.concurrency + 4, thread_name_prefix="swerl-collect"
        )
        loop.set_default_executor(pool)
        await collector.run(jobs)

    try:
        asyncio.run(main())
    finally:
        from swerl_cli.sandbox import lifecycle

        lifecycle.sweep()
    return count
