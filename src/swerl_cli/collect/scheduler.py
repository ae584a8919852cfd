"""The in-process scheduler: bounded concurrency over planned jobs, sandboxes started ahead, removals in the
background. Each episode itself is `episode.play_job`, which another executor can run instead."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Callable, Iterable
from typing import Any

from swerl_cli.agent.prompts import PromptConfig, load_prompts
from swerl_cli.collect.config import CollectConfig
from swerl_cli.collect.episode import close_when_started, episode_error, play_job, start_job_sandbox
from swerl_cli.collect.plan import Job, plan_jobs
from swerl_cli.collect.policy import build_policy
from swerl_cli.core import aio
from swerl_cli.core.config_stop import ConfigErrorStop
from swerl_cli.core.errors import SwerlError
from swerl_cli.executor import this_node
from swerl_cli.policy.base import Policy
from swerl_cli.streams.records import Located, Task

START_PARALLELISM = max(4, os.cpu_count() or 4)  # sandbox starts in flight at once
PULL_PARALLELISM = 2  # image pulls started ahead for queued episodes, in flight at once


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
        self._closing: set[asyncio.Future[None]] = set()
        # Removals run in the background, a few at a time: when a wave of episodes ends together, removing every
        # container at once would starve the next wave's first commands of CPU.
        self._removals = asyncio.Semaphore(max(1, (os.cpu_count() or 2) // 2))
        self._starts = asyncio.Semaphore(START_PARALLELISM)
        self._ahead: dict[int, asyncio.Future[Any]] = {}  # job index -> sandbox started ahead by _prefetch
        self._on_demand = 0  # episodes waiting on a sandbox they started themselves
        self._next = 0
        self._moved = asyncio.Event()

    async def run(self, jobs: list[Job]) -> None:
        """Run every job with at most `concurrency` episodes at once, starting sandboxes ahead for queued ones."""
        self.on_event("plan", len(jobs))

        async def worker() -> None:
            while self._next < len(jobs):
                i = self._next
                self._next += 1
                self._moved.set()
                self.emit(await self.episode(jobs[i], starting=self._ahead.pop(i, None)))

        prefetcher = asyncio.ensure_future(self._prefetch(jobs))
        puller = asyncio.ensure_future(self._pull_ahead(jobs))
        try:
            await asyncio.gather(*(worker() for _ in range(min(self.cfg.concurrency, max(1, len(jobs))))))
        finally:
            prefetcher.cancel()
            puller.cancel()
            for starting in self._ahead.values():  # started for jobs that never ran (interrupt, failure)
                self._closing.add(asyncio.ensure_future(close_when_started(starting, self._removals)))
            self._ahead.clear()
            await asyncio.gather(prefetcher, puller, *self._closing, return_exceptions=True)
            await self.policy.aclose()

    async def _prefetch(self, jobs: list[Job]) -> None:
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
            starting = self._start(jobs[todo])
            self._ahead[todo] = starting
            await asyncio.wait([starting])

    async def _pull_ahead(self, jobs: list[Job]) -> None:
        """Pull the missing images of queued jobs (the next 4 x concurrency of them, PULL_PARALLELISM at a time)
        while episodes run, so no episode waits for a pull that could have started earlier. A failed pull is left
        to the episode that needs the image (its own pull attempt makes the error record)."""
        backend = self.cfg.sandbox_backend
        if not backend.uses_images:
            return
        from swerl_cli.streams.task_fields import image_problem

        requested: set[str] = set()
        gate = asyncio.Semaphore(PULL_PARALLELISM)
        pending: set[asyncio.Future[Any]] = set()

        async def pull(image: str) -> None:
            async with gate:
                try:
                    await asyncio.to_thread(backend.ensure_image, image)
                except SwerlError:
                    pass

        while self._next < len(jobs):
            window = jobs[self._next : self._next + 4 * self.cfg.concurrency + self.cfg.lookahead()]
            refs = [
                backend.resolve_image(j.task.image)
                for j in window
                if image_problem(j.task.image) is None  # a bad reference is its episode's error record
            ]
            todo = next((r for r in refs if r not in requested), None)
            if todo is None:
                self._moved.clear()
                await self._moved.wait()
                continue
            requested.add(todo)
            pending.add(asyncio.ensure_future(pull(todo)))
            pending = {p for p in pending if not p.done()}
            if len(pending) >= PULL_PARALLELISM:
                await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)

    def _start(self, job: Job) -> asyncio.Future[Any]:
        """Start the job's sandbox in a worker thread, at most a few at once: when many episodes start together,
        first come first served gets each one its container sooner than starting all of them in parallel."""

        async def start() -> Any:
            async with self._starts:
                return await asyncio.to_thread(start_job_sandbox, job, self.cfg)

        return asyncio.ensure_future(start())

    async def episode(self, job: Job, starting: asyncio.Future[Any] | None = None) -> dict[str, Any]:
        """One episode: sandbox up (or `starting`, begun ahead), agent loop; the sandbox is removed in the
        background (the record does not wait for it; run() awaits all removals)."""
        self.on_event("start", (job.task.instance_id, job.sample))
        # The sandbox starts in a thread while the first policy request is in flight (it needs no sandbox).
        if starting is None:
            starting = self._start(job)
            self._on_demand += 1
            starting.add_done_callback(self._started_on_demand)
        try:
            record = await play_job(job, self.cfg, self.policy, starting, self.prompts)
            record["node"] = this_node()
        finally:
            self._closing.add(asyncio.ensure_future(close_when_started(starting, self._removals)))
        self.on_event("end", record)
        return record

    def _started_on_demand(self, _: asyncio.Future[Any]) -> None:
        self._on_demand -= 1
        self._moved.set()


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
    jobs: list[Job] | list[tuple[Located, Task, int]],
    cfg: CollectConfig,
    emit: Callable[[dict[str, Any]], None],
    *,
    on_event: Callable[[str, Any], None] | None = None,
    policy: Policy | None = None,
) -> int:
    """Run jobs from `plan_jobs` (planning first validates the whole input before anything is written)."""
    collector = Collector(cfg, policy or build_policy(cfg), emit, on_event)
    count = 0
    # the first episodes all failing on the configuration, or without a sandbox from an engine that does not
    # answer, end the run with one line
    stop = ConfigErrorStop(episode_error, unavailable=cfg.sandbox_backend.unavailable)

    def counted(record: dict[str, Any]) -> None:
        nonlocal count
        for out in stop.push(record):
            emit(out)
            count += 1

    collector.emit = counted

    async def main() -> None:
        loop = asyncio.get_running_loop()
        pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=2 * cfg.concurrency + 4, thread_name_prefix="swerl-collect"
        )
        loop.set_default_executor(pool)
        await collector.run([Job(*j) for j in jobs])

    cfg.sandbox_backend.remove_stale(cfg.run)  # left by an earlier run of this name that was killed (SIGKILL, OOM)
    try:
        aio.run(main())
        for out in stop.finish():
            emit(out)
            count += 1
    finally:
        from swerl_cli.sandbox import lifecycle

        lifecycle.sweep()
    return count
