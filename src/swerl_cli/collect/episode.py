"""One episode job end to end, and the trajectory record it yields.

`play_job` is the unit any executor runs (the in-process scheduler here; another executor may call it on a worker):
it takes a job, the config, a policy and a future that resolves to the job's sandbox, runs the agent and returns
the record. Closing the sandbox is the caller's (the scheduler closes in the background); `run_job` is the
self-contained form that starts and closes the sandbox itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from swerl_cli.agent.loop import EpisodeResult, run_episode
from swerl_cli.agent.prompts import PromptConfig, load_prompts
from swerl_cli.collect.config import CollectConfig
from swerl_cli.collect.plan import Job
from swerl_cli.core.errors import InputError, SwerlError
from swerl_cli.policy.base import EpisodeInfo, Policy, Sampling
from swerl_cli.streams.task_fields import task_row_error
from swerl_cli.streams.trajectories import trajectory_record


def job_sampling(cfg: CollectConfig, sample: int) -> Sampling:
    """The sampling parameters of one sample (a base seed becomes seed + sample)."""
    sampling = cfg.sampling()
    return sampling if cfg.seed is None else dataclasses.replace(sampling, seed=cfg.seed + sample)


def policy_record(policy: Policy, cfg: CollectConfig, sampling: Sampling) -> dict[str, Any]:
    """The trajectory's `policy` field."""
    out = dict(policy.describe())
    out.update(action_format=cfg.action_format, sampling=sampling.to_json(), biased_sampling=sampling.is_biased)
    return out


def episode_record(job: Job, cfg: CollectConfig, policy: Policy, sampling: Sampling, result: EpisodeResult) -> dict:
    """The trajectory record of a finished (or failed) episode (streams.trajectories builds it)."""
    return trajectory_record(
        instance_id=job.task.instance_id,
        run=cfg.run,
        sample=job.sample,
        task=job.loc.obj,
        policy=policy_record(policy, cfg, sampling),
        messages=result.messages,
        turns=result.turns,
        patch=result.patch,
        exit_status=result.exit_status,
        error=result.error,
        stats=result.stats,
    )


def episode_error(record: dict[str, Any]) -> str | None:
    """The error of a failed episode's record (`TypeName: message`), None for any other."""
    error = record.get("error")
    return str(error) if record.get("exit_status") == "error" and error else None


def no_episode_stats() -> dict[str, Any]:
    """The `stats` of an episode that never ran (a refused row, a job lost with its node): every count 0."""
    stats: dict[str, Any] = dict.fromkeys(("turns", "format_errors", "tokens_prompt", "tokens_generated"), 0)
    stats.update(tokens_total=0, wall_s=0.0, sandbox_s=0.0, policy_s=0.0)
    return stats


def start_job_sandbox(job: Job, cfg: CollectConfig) -> Any:
    """Start the job's sandbox with the config's backend (blocking; run it in a thread)."""
    from swerl_cli.sandbox import start_sandbox

    return start_sandbox(job.task, cfg.sandbox_backend, limits=cfg.sandbox_limits(), run_id=cfg.run)


async def play_job(
    job: Job,
    cfg: CollectConfig,
    policy: Policy,
    starting: asyncio.Future[Any],
    prompts: PromptConfig | None = None,
) -> dict[str, Any]:
    """Run the agent on `job` in the sandbox `starting` resolves to; a failure is an error record (run_episode)."""
    sampling = job_sampling(cfg, job.sample)
    bad = task_row_error(job.loc, job.task, images=cfg.sandbox_backend.uses_images)
    if bad is not None:  # one row's image, workdir or base_commit docker or git would refuse: its record only
        return invalid_row_record(job, cfg, policy, sampling, bad)
    prompts = prompts or load_prompts(cfg.prompt_config)
    settings = cfg.agent()
    info = EpisodeInfo(job.task.instance_id, job.sample, cfg.run, job.loc.obj, cfg.max_context_tokens)
    result = await run_episode(job.loc.obj, policy, starting, sampling, prompts, settings, info)
    return episode_record(job, cfg, policy, sampling, result)


def invalid_row_record(job: Job, cfg: CollectConfig, policy: Policy, sampling: Sampling, err: InputError) -> dict:
    """The error trajectory of a row refused before its episode (no sandbox, no policy request): `error` names
    the row and the field, `invalid_field` the field (docs/reliability.md)."""
    result = EpisodeResult(messages=[], error=f"InputError: {err}", stats=no_episode_stats())
    return {**episode_record(job, cfg, policy, sampling, result), "invalid_field": err.field}


async def close_when_started(starting: asyncio.Future[Any], gate: asyncio.Semaphore | None = None) -> None:
    """Remove the sandbox once its start has finished (or do nothing if the start failed)."""
    try:
        sandbox = await asyncio.shield(starting)
    except (SwerlError, asyncio.CancelledError):
        return
    if gate is None:
        await asyncio.to_thread(sandbox.close)
        return
    async with gate:
        await asyncio.to_thread(sandbox.close)


async def run_job(job: Job, cfg: CollectConfig, policy: Policy, prompts: PromptConfig | None = None) -> dict:
    """Start the job's sandbox, play the episode, remove the sandbox: one record (the form a remote worker runs)."""
    starting = asyncio.ensure_future(asyncio.to_thread(start_job_sandbox, job, cfg))
    try:
        return await play_job(job, cfg, policy, starting, prompts)
    finally:
        await close_when_started(starting)
