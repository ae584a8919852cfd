"""`swerl tasks`: import SWE-bench-style rows, build task images, validate tasks."""

from __future__ import annotations

from typing import Annotated

import typer

from swerl_cli.cli import tasks_mine, tasks_pull
from swerl_cli.cli._common import (
    CONFIG,
    EPISODE_CPUS,
    EPISODE_MEMORY_GB,
    INPUTS,
    MAX_EPISODE_RETRIES,
    OUTPUT,
    RAY,
    boundary,
    err_console,
)
from swerl_cli.cli._images import IMAGE_BUDGET, PULL, REGISTRY, apply_images, worker_images
from swerl_cli.jsonl import read_many
from swerl_cli.outputs import open_output

app = typer.Typer(
    help="Import SWE-bench-style rows as task records, pull or build task images, validate tasks.",
    no_args_is_help=True,
)
tasks_pull.register(app)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="tasks")


@app.command(
    "import",
    help="Read SWE-bench (full, Lite, Verified), SWE-rebench, SWE-Gym or SWE-smith rows (.jsonl, .json array or "
    "object, .parquet) and write task records with the harness's test command and log parser.",
)
@boundary("tasks import")
def _import(
    inputs: Annotated[list[str], typer.Argument(help="Row files: .jsonl(.gz), .json (array or object), .parquet.")],
    output: OUTPUT = None,
    dataset: Annotated[
        str, typer.Option(help="auto, swe-bench, swe-rebench, swe-gym or swe-smith (auto: by each row's fields).")
    ] = "auto",
    namespace: Annotated[
        str | None, typer.Option(help="Registry namespace of the image rule [default: the dataset's].")
    ] = None,
    workdir: Annotated[str, typer.Option(help="Repository path in the image when a row names none.")] = "/testbed",
) -> None:
    from swerl_cli.tasks_import import import_row, read_rows

    with open_output(output, "replace") as out:
        for path in inputs:
            for loc in read_rows(path):
                out.write(import_row(loc, namespace=namespace, workdir=workdir, dataset=dataset))
    err_console.print(f"swerl tasks import: {out.count} tasks")


@app.command("build", help="Build each task's image from its setup commands on a base image (cached by image name).")
@boundary("tasks build")
def _build(
    inputs: INPUTS = None,
    base: Annotated[str, typer.Option(help="Base image the setup commands run on.")] = "swerl-base",
    network: Annotated[str, typer.Option(help="Network during setup: none or host.")] = "none",
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when a matching image exists.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Stream setup output to stderr.")] = False,
) -> None:
    from swerl_cli.errors import ConfigError
    from swerl_cli.records import Task, check_schema
    from swerl_cli.sandbox.build import build_image

    if network not in ("none", "host"):
        raise ConfigError(f"--network must be none or host; got {network!r}")
    tasks = []
    for loc in read_many(inputs or []):
        check_schema(loc, "swerl.task")
        tasks.append(Task.from_json(loc))
    seen: set[str] = set()
    for i, task in enumerate(tasks, 1):
        if task.image in seen:
            continue
        seen.add(task.image)
        log = err_console.print if verbose else None
        result = build_image(task, base_image=base, network=network == "host", force=force, log=log)
        err_console.print(f"[{i}/{len(tasks)}] {task.image}: {result}")


@app.command("validate", help="Grade gold and empty patches R times per task; write tasks with a validation field.")
@boundary("tasks validate")
def _validate(
    inputs: INPUTS = None,
    output: OUTPUT = None,
    config: CONFIG = None,
    repeats: Annotated[int, typer.Option("--repeats", "-r", metavar="R", help="Runs of each patch.")] = 2,
    workers: Annotated[int | None, typer.Option(metavar="N", help="Sandboxes in parallel [default: 1].")] = None,
    timeout_s: Annotated[float | None, typer.Option(metavar="S", help="test_cmd timeout in seconds.")] = None,
    run_id: Annotated[str | None, typer.Option(help="Label for this run's containers.")] = None,
    registry: REGISTRY = None,
    pull: PULL = None,
    image_budget_gb: IMAGE_BUDGET = None,
    resume: Annotated[bool, typer.Option("--resume", help="With -o: skip tasks already in the output file.")] = False,
    ray: RAY = None,
    episode_cpus: EPISODE_CPUS = None,
    episode_memory_gb: EPISODE_MEMORY_GB = None,
    max_episode_retries: MAX_EPISODE_RETRIES = None,
) -> None:
    from swerl_cli.config import resolve_config
    from swerl_cli.errors import ConfigError
    from swerl_cli.executor import open_executor, ray_address
    from swerl_cli.grading.grade import GradeConfig
    from swerl_cli.grading.validate import validate_tasks
    from swerl_cli.records import Task, check_schema

    if repeats < 1:
        raise ConfigError(f"--repeats must be >= 1; got {repeats}")
    cfg = resolve_config(
        GradeConfig,
        config,
        workers=workers,
        timeout_s=timeout_s,
        run_id=run_id,
        registry=registry,
        pull=pull,
        image_budget_gb=image_budget_gb,
        ray=ray_address(ray),
        episode_cpus=episode_cpus,
        episode_memory_gb=episode_memory_gb,
        max_episode_retries=max_episode_retries,
    )
    apply_images(cfg, "tasks validate")
    tasks = []
    for loc in read_many(inputs or []):
        check_schema(loc, "swerl.task")
        tasks.append(Task.from_json(loc))
    bad = 0
    executor = open_executor(
        cfg.ray, cfg.workers, cfg.placement(), name="swerl-validate", setup=worker_images(cfg)
    )  # before any output
    with open_output(output, "append", resume=resume, inputs=inputs or [], id_key="instance_id") as out:
        todo = [t for t in tasks if t.instance_id not in out.done_ids]
        for rec in validate_tasks(todo, cfg, repeats, executor=executor):
            out.write(rec)
            v = rec["validation"]
            bad += not v["valid"]
            flaky = f", flaky: {', '.join(v['flaky_tests'])}" if v["flaky_tests"] else ""
            errs = f", errors: {'; '.join(v['errors'])}" if v["errors"] else ""
            err_console.print(
                f"{rec['instance_id']}: {'valid' if v['valid'] else 'INVALID'} (gold {v['gold_resolved']}/{repeats},"
                f" empty {v['empty_resolved']}/{repeats}{flaky}{errs})"
            )
    skipped = f" ({len(tasks) - out.count} already in the output)" if out.count < len(tasks) else ""
    err_console.print(f"swerl tasks validate: {out.count - bad} valid, {bad} invalid{skipped}")


tasks_mine.register(app)  # after the commands above: `swerl tasks --help` lists it last
