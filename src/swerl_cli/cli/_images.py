"""The job options (task images and Ray) of collect, grade, tasks validate and tasks pull, and where image progress
goes.

They are the fields of `executor.JobSettings`, declared there with their help: a config that extends it gets them
as flags through `config_options`; a command that takes one alone uses the option built here from the same field.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, TypeVar

from swerl_cli.cli._common import err_console
from swerl_cli.cli._flags import Flags, option
from swerl_cli.core.config import resolve_config
from swerl_cli.executor import JobSettings, ray_address

C = TypeVar("C", bound=JobSettings)

RAY = Annotated[str | None, option(JobSettings, "ray")]  # `sandbox prune` and `tasks pull` take --ray alone


def job_fields() -> tuple[str, ...]:
    """The names of the job fields (flags `--registry` ... `--max-episode-retries`)."""
    return tuple(f.name for f in dataclasses.fields(JobSettings))


def resolve_job_config(cls: type[C], config: str | None, flags: Flags | None) -> C:
    """`resolve_config` for a config with the job fields: `--ray` unset falls back to $SWERL_RAY_ADDRESS."""
    flags = flags or {}
    return resolve_config(cls, config, **{**flags, "ray": ray_address(flags.get("ray"))})


def report_images(cfg: Any, command: str) -> None:
    """The config's sandbox backend reports its image pulls and evictions on stderr, one line each (on this
    machine: a cluster's workers get the backend without it)."""
    cfg.sandbox_backend.log = lambda msg: err_console.print(f"swerl {command}: {msg}")
