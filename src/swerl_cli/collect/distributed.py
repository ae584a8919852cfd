"""`collect --ray`: every episode is one job on an executor (a Ray cluster's nodes), started and ended there.

The driver plans jobs, keeps `concurrency` of them in flight and emits each record as it comes back; the worker
runs `episode.run_job` (sandbox on its own node's Docker engine, agent loop, sandbox removed). Policies say how
they travel (`PolicyBackend.distributed`): `ship` sends the driver's object (gold, replay), `rebuild` builds one per
episode from the config on the worker (openai: every worker talks to the `--base-url`s itself). In-process model
backends (hf, vllm) cannot be spread over nodes and are refused (`collect/policy.py:check_distributable`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swerl_cli.collect.config import CollectConfig
from swerl_cli.collect.episode import run_job
from swerl_cli.collect.plan import Job
from swerl_cli.collect.policy import check_distributable, episode_policy
from swerl_cli.core import aio
from swerl_cli.core.errors import JobLostError
from swerl_cli.executor import stream_jobs
from swerl_cli.policy.base import Policy

__all__ = ["check_distributable", "episode_job", "run_jobs_on"]


def episode_job(job: Job, cfg: CollectConfig, policy: Policy | None) -> dict[str, Any]:
    """Runs on a worker: one episode end to end (sandbox started and removed here); one trajectory record."""
    own = policy is None
    active: Policy = episode_policy(cfg, job.task.instance_id, job.sample) if policy is None else policy

    async def main() -> dict[str, Any]:
        try:
            return await run_job(job, cfg, active)
        finally:
            if own:
                await active.aclose()

    return aio.run(main())


def run_jobs_on(
    executor: Any,
    jobs: list[Job],
    cfg: CollectConfig,
    emit: Callable[[dict[str, Any]], None],
    *,
    policy: Policy,
    on_event: Callable[[str, Any], None] | None = None,
) -> int:
    """Run planned jobs on `executor`, emitting each record (with its `node`) as it finishes; returns the count.

    A job lost with its node after the executor's retries is an `error` trajectory, never a reward.
    """
    from swerl_cli.agent.loop import EpisodeResult, initial_messages
    from swerl_cli.agent.prompts import load_prompts
    from swerl_cli.collect.episode import episode_error, episode_record, job_sampling, no_episode_stats
    from swerl_cli.core.config_stop import ConfigErrorStop
    from swerl_cli.sandbox import run_cleanup

    event = on_event or (lambda kind, payload: None)
    shipped = executor.share(policy) if check_distributable(cfg) == "ship" else None
    event("plan", len(jobs))

    count = 0
    stop = ConfigErrorStop(episode_error)
    # Container labels carry the run name, which other collects may share: only sandboxes whose owner is gone go.
    stale = run_cleanup(cfg.run, cfg.sandbox_backend, stale_only=True)
    submitted = ((job, episode_job, (job, cfg, shipped)) for job in jobs)
    started = lambda job: event("start", (job.task.instance_id, job.sample))  # noqa: E731 - one use
    for job, outcome in stream_jobs(executor, submitted, cleanup=stale, stale_cleanup=stale, on_submit=started):
        if isinstance(outcome, JobLostError):
            messages = initial_messages(job.loc.obj, load_prompts(cfg.prompt_config), cfg.agent())
            lost = f"JobLostError: {outcome}"
            result = EpisodeResult(messages=messages, exit_status="error", error=lost, stats=no_episode_stats())
            record = episode_record(job, cfg, policy, job_sampling(cfg, job.sample), result)
            record["node"] = None
        else:
            record = {**outcome.value, "node": outcome.node}
        for out in stop.push(record):  # the first episodes all failing on the configuration end the run
            emit(out)
            count += 1
        event("end", record)
    for out in stop.finish():
        emit(out)
        count += 1
    return count
