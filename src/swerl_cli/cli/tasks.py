"""`swerl tasks`: import SWE-bench-style rows, build task images, validate tasks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from swerl_cli.cli import tasks_mine, tasks_pull, tasks_synth
from swerl_cli.cli._common import CONFIG, INPUTS, OUTPUT, boundary, err_console
from swerl_cli.cli._flags import Flags, config_options
from swerl_cli.cli._images import job_fields, report_images, resolve_job_config
from swerl_cli.grading.config import GradeConfig
from swerl_cli.sandbox import DEFAULT_BACKEND
from swerl_cli.streams.jsonl import read_many
from swerl_cli.streams.outputs import open_output
from swerl_cli.tasks.importers import dataset_names

if TYPE_CHECKING:
    from swerl_cli.streams.records import Located

app = typer.Typer(
    help="Import SWE-bench-style rows as task records, pull or build task images, validate tasks.",
    no_args_is_help=True,
)
tasks_pull.register(app)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="tasks")


def _choices(names: tuple[str, ...]) -> str:
    """`a, b or c`."""
    return f"{', '.join(names[:-1])} or {names[-1]}"


ALLOW_SOURCE = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-source",
        metavar="DIR",
        help="A directory whose repositories and bundles a row's repo_source may name (repeatable); a row may "
        "always name a repository URL (https, git, ssh).",
    ),
]


@app.command(
    "import",
    help="Read SWE-bench (full, Lite, Verified), SWE-rebench, SWE-Gym or SWE-smith rows (.jsonl, .json array or "
    "object, .parquet) and write task records with the harness's test command and log parser.",
)
@boundary("tasks import")
def _import(
    inputs: Annotated[list[str], typer.Argument(help="Row files: .jsonl(.gz), .json (array or object), .parquet.")],
    output: OUTPUT = None,
    dataset: Annotated[str, typer.Option(help=f"{_choices(dataset_names())} (auto: by each row's fields).")] = "auto",
    namespace: Annotated[
        str | None, typer.Option(help="Registry namespace of the image rule [default: the dataset's].")
    ] = None,
    workdir: Annotated[str, typer.Option(help="Repository path in the image when a row names none.")] = "/testbed",
    allow_source: ALLOW_SOURCE = None,
) -> None:
    from swerl_cli.tasks.importers import import_row, read_rows

    allowed = allow_source or []
    with open_output(output, "replace", inputs=inputs) as out:
        for path in inputs:
            for loc in read_rows(path):
                out.write(
                    import_row(loc, namespace=namespace, workdir=workdir, dataset=dataset, allowed_sources=allowed)
                )
    err_console.print(f"swerl tasks import: {out.count} tasks")


@app.command(
    "build",
    help="Build each task's image from its setup commands on a base image (cached by image name). A row that "
    "cannot be built (a bad field, a repo_source outside --allow-source, a failed fetch or setup) is reported and "
    "the rest are built; the exit code is then 4.",
)
@boundary("tasks build")
def _build(
    inputs: INPUTS = None,
    base: Annotated[str, typer.Option(help="Base image the setup commands run on.")] = "swerl-base",
    network: Annotated[str, typer.Option(help="Network during setup: none or host.")] = "none",
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when a matching image exists.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Stream setup output to stderr.")] = False,
    allow_source: ALLOW_SOURCE = None,
    sandbox: Annotated[str, typer.Option(help="Engine the images are built in: docker or podman.")] = DEFAULT_BACKEND,
) -> None:
    from swerl_cli.core.errors import RowsFailedError, UsageError
    from swerl_cli.sandbox import create
    from swerl_cli.sandbox.build import check_base

    if network not in ("none", "host"):
        raise UsageError(f"--network must be none or host; got {network!r}")
    engine = create(sandbox)  # the one backend every row is built in
    rows = list(read_many(inputs or []))  # a file that is not JSON Lines stops here, before any build
    check_base(base, engine)  # no engine or no base image: the run's failure (exit 1), not every row's
    failed: list[str] = []
    seen: set[str] = set()
    for i, loc in enumerate(rows, 1):
        result = _build_row(loc, seen, base, network == "host", force, verbose, allow_source or [], engine)
        err_console.print(f"[{i}/{len(rows)}] {result}")
        if result.startswith("FAILED"):
            failed.append(result.removeprefix("FAILED "))
    err_console.print(f"swerl tasks build: {len(rows) - len(failed)} rows ready, {len(failed)} failed")
    if failed:
        raise RowsFailedError(len(failed), len(rows), failed[0], what="rows could not be built, the rest were")


def _build_row(
    loc: Any, seen: set[str], base: str, network: bool, force: bool, verbose: bool, allow: list[str], engine: Any
) -> str:
    """Build one row's image: '<image>: built|cached|same image as an earlier row', or 'FAILED <why>'."""
    from swerl_cli.core.errors import InputError, SandboxError
    from swerl_cli.sandbox.build import build_image
    from swerl_cli.streams.records import Task, check_schema
    from swerl_cli.streams.task_fields import task_row_error

    try:
        check_schema(loc, "swerl.task")
        task = Task.from_json(loc)
        bad = task_row_error(loc, task, build=True, allowed=allow)
        if bad is not None:
            raise bad
        if task.image in seen:
            return f"{task.image}: same image as an earlier row"
        seen.add(task.image)
        log = err_console.print if verbose else None
        built = build_image(task, engine, base_image=base, network=network, force=force, log=log, allowed_sources=allow)
        return f"{task.image}: {built}"
    except InputError as e:
        return f"FAILED {e}"
    except SandboxError as e:
        return f"FAILED {loc.error(None, str(e))}"


@app.command("validate", help="Grade gold and empty patches R times per task; write tasks with a validation field.")
@boundary("tasks validate")
@config_options(GradeConfig, include=("workers", "timeout_s", "sandbox", "repo_dir", "run_id", *job_fields()))
def _validate(
    inputs: INPUTS = None,
    output: OUTPUT = None,
    config: CONFIG = None,
    repeats: Annotated[int, typer.Option("--repeats", "-r", metavar="R", help="Runs of each patch.")] = 2,
    resume: Annotated[bool, typer.Option("--resume", help="With -o: skip tasks already in the output file.")] = False,
    flags: Flags | None = None,
) -> None:
    from swerl_cli.core.errors import UsageError
    from swerl_cli.executor import open_executor
    from swerl_cli.grading.validate import split_tasks, validate_tasks
    from swerl_cli.streams.task_fields import RowFailures

    if repeats < 1:
        raise UsageError(f"--repeats must be >= 1; got {repeats}")
    cfg = resolve_job_config(GradeConfig, config, flags)
    report_images(cfg, "tasks validate")
    images = cfg.sandbox_backend.uses_images
    tasks, refused = split_tasks(_once(read_many(inputs or [])), images)  # refused rows: exit 4 at the end
    executor = open_executor(cfg.ray, cfg.workers, cfg.placement(), name="swerl-validate")  # before any output
    invalid, failures = 0, RowFailures()
    with open_output(output, "append", resume=resume, inputs=inputs or [], id_key="instance_id") as out:
        for loc in out.previous():  # a resumed run: rows refused earlier still count toward the exit code
            failures.add(loc.obj)
        todo = [t for t in tasks if t.instance_id not in out.done_ids]
        new_refused = [r for r in refused if r["instance_id"] not in out.done_ids]
        for rec in [*new_refused, *validate_tasks(todo, cfg, repeats, executor=executor)]:
            out.write(rec)
            failures.add(rec)
            invalid += not rec["validation"]["valid"]
            _report(rec, repeats)
    total = len(tasks) + len(refused)
    skipped = f" ({total - out.count} already in the output)" if out.count < total else ""
    err_console.print(f"swerl tasks validate: {out.count - invalid} valid, {invalid} invalid{skipped}")
    failures.check()  # exit 4 when some rows were refused (each has its record)


def _once(rows: Iterator[Located]) -> Iterator[Located]:
    """The rows, each instance_id once: a task listed twice is one line naming both places (exit 3), before any
    sandbox starts (the duplicate-id rule of docs/records.md), not validated twice and written twice."""
    from swerl_cli.streams.records import UniqueIds

    ids = UniqueIds()
    for loc in rows:
        iid = loc.obj.get("instance_id") if isinstance(loc.obj, dict) else None
        ids.check(loc, iid if isinstance(iid, str) else None, "instance_id")
        yield loc


def _report(rec: dict[str, Any], repeats: int) -> None:
    """One stderr line per validated task."""
    v = rec["validation"]
    flaky = f", flaky: {', '.join(v['flaky_tests'])}" if v["flaky_tests"] else ""
    errs = f", errors: {'; '.join(v['errors'])}" if v["errors"] else ""
    err_console.print(
        f"{rec['instance_id']}: {'valid' if v['valid'] else 'INVALID'} (gold {v['gold_resolved']}/{repeats},"
        f" empty {v['empty_resolved']}/{repeats}{flaky}{errs})"
    )


tasks_mine.register(app)  # after the commands above: `swerl tasks --help` lists it last
tasks_synth.register(app)
