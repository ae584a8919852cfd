"""`swerl collect` as a library, split along its seams:

- `config`: `CollectConfig` (one argument per flag; the policy held as a name and its backend's `Options`);
- `plan`: tasks x samples -> `Job`s (shards, resume);
- `episode`: one job -> one trajectory record (`play_job`, `run_job`; what any executor runs);
- `scheduler`: the in-process executor (bounded concurrency, sandboxes started ahead);
- `policy`: the config -> the `--policy` backend (`build_policy`, from the config's `policy_options`).
"""

from __future__ import annotations

from swerl_cli.collect.config import ACTION_FORMATS, CollectConfig
from swerl_cli.collect.episode import episode_record, play_job, run_job
from swerl_cli.collect.plan import Job, plan_jobs
from swerl_cli.collect.policy import build_policy
from swerl_cli.collect.scheduler import Collector, collect_records, run_jobs

__all__ = [
    "ACTION_FORMATS",
    "CollectConfig",
    "Collector",
    "Job",
    "build_policy",
    "collect_records",
    "episode_record",
    "play_job",
    "plan_jobs",
    "run_job",
    "run_jobs",
]
