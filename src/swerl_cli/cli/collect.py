"""`swerl collect`: run the agent on task records and write one trajectory record per (task, sample)."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from swerl_cli.cli._common import APPEND_OUTPUT, CONFIG, INPUT, boundary, err_console
from swerl_cli.cli._flags import Flags, config_options
from swerl_cli.cli._images import report_images, resolve_job_config
from swerl_cli.collect.config import CollectConfig


def register(app: typer.Typer) -> None:
    app.command("collect", help="Run the agent on task records and write one trajectory record per (task, sample).")(
        _collect
    )


@boundary("collect")
@config_options(CollectConfig)
def _collect(
    input: INPUT = "-",
    output: APPEND_OUTPUT = None,
    config: CONFIG = None,
    resume: Annotated[bool, typer.Option(help="Keep records already in -o and run only the missing ids.")] = False,
    flags: Flags | None = None,
) -> None:
    from swerl_cli.streams.stdio import engine_output_to_stderr

    cfg = resolve_job_config(CollectConfig, config, flags)
    report_images(cfg, "collect")
    # An engine's processes (vLLM's engine core and workers, Ray's) print to descriptor 1: it points at stderr for
    # the whole run, and records go to the real stdout through a private descriptor.
    with engine_output_to_stderr():
        summary, failures = _run(cfg, input, output, resume)
    err_console.print(f"swerl collect: {summary}")
    failures.check()  # exit 4 when some rows were refused (each has its error record)


def _run(cfg: CollectConfig, input: str, output: str | None, resume: bool) -> tuple[str, Any]:
    from swerl_cli.collect import build_policy, plan_jobs, run_jobs
    from swerl_cli.executor import open_executor
    from swerl_cli.streams.jsonl import read_records
    from swerl_cli.streams.outputs import open_output
    from swerl_cli.streams.task_fields import RowFailures

    inputs = [input, *cfg.policy_options.input_files()]  # the replay policy's trajectories are an input too
    executor = None
    if cfg.ray:  # the policy is checked and the cluster joined before the output is touched
        from swerl_cli.collect.distributed import check_distributable, run_jobs_on

        check_distributable(cfg)
        executor = open_executor(cfg.ray, cfg.concurrency, cfg.placement())
    failures = RowFailures()
    with open_output(output, "append", resume=resume, inputs=inputs) as out:
        # Every task is validated and the policy configured before the first record: bad input loses nothing.
        jobs = plan_jobs(read_records(input), cfg, out.done_ids)
        backend = build_policy(cfg)
        for loc in out.previous():  # a resumed run: rows refused earlier still count toward the exit code
            failures.add(loc.obj)

        def write(record: dict[str, Any]) -> None:
            out.write(record)
            failures.add(record)

        progress = _Progress(len(out.done_ids))
        with progress:
            if executor is not None:
                run_jobs_on(executor, jobs, cfg, write, policy=backend, on_event=progress.event)
            else:
                run_jobs(jobs, cfg, write, on_event=progress.event, policy=backend)
    return progress.summary(), failures


class _Progress:
    """Rich progress on stderr: done/total, running, submitted, errors, generated tokens per second."""

    def __init__(self, skipped: int):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(
            TextColumn("collect"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=err_console,
            transient=True,
        )
        self.task = self.bar.add_task("", total=None)
        self.skipped, self.running, self.done, self.errors, self.tokens = skipped, 0, 0, 0, 0
        self.status: dict[str, int] = {}
        self.t0 = time.perf_counter()

    def __enter__(self) -> _Progress:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.__exit__(*exc)

    def event(self, kind: str, payload: Any) -> None:
        if kind == "plan":
            self.bar.update(self.task, total=payload)
        elif kind == "start":
            self.running += 1
        elif kind == "end":
            self.running -= 1
            self.done += 1
            self.errors += payload["exit_status"] == "error"
            self.status[payload["exit_status"]] = self.status.get(payload["exit_status"], 0) + 1
            self.tokens += payload["stats"].get("tokens_generated", 0)
            self.bar.update(self.task, completed=self.done)
        rate = self.tokens / max(1e-9, time.perf_counter() - self.t0)
        desc = (
            f"running {self.running}  submitted {self.status.get('submitted', 0)}  errors {self.errors}  "
            f"{rate:.0f} tok/s"
        )
        self.bar.update(self.task, description=desc)

    def summary(self) -> str:
        parts = ", ".join(f"{n} {s}" for s, n in sorted(self.status.items())) or "nothing to do"
        skipped = f" ({self.skipped} already done)" if self.skipped else ""
        return f"{self.done} episodes: {parts}{skipped}; {self.tokens} tokens generated"
