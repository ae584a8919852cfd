"""`swerl collect` as a library, split along its seams:

- `config`: `CollectConfig` (one field per flag);
- `plan`: tasks x samples -> `Job`s (shards, resume);
- `episode`: one job -> one trajectory record (`play_job`, `run_job`; what any executor runs);
- `scheduler`: the in-process executor (bounded concurrency, sandboxes started ahead);
- the policy factory is `swerl_cli.policy.build_policy` (each backend's `from_config`).
"""

from __future__ import annotations

from swerl_cli.collect.config import ACTION_FORMATS, CollectConfig
from swerl_cli.collect.episode import play_job, run_job, trajectory_record
from swerl_cli.collect.plan import Job, episode_id, plan_jobs
from swerl_cli.collect.scheduler import Collector, collect_records, run_jobs
from swerl_cli.policy import build_policy

__all__ = [
    "ACTION_FORMATS",
    "CollectConfig",
    "Collector",
    "Job",
    "build_policy",
    "collect_records",
    "episode_id",
    "play_job",
    "plan_jobs",
    "run_job",
    "run_jobs",
    "trajectory_record",
]
