"""`swerl tasks pull`: prefetch the images of a task file, several pulls at a time, with a progress bar."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from swerl_cli.cli._common import CONFIG, INPUTS, OUTPUT, boundary, err_console
from swerl_cli.cli._flags import Flags, config_options
from swerl_cli.cli._images import RAY
from swerl_cli.sandbox import DEFAULT_BACKEND
from swerl_cli.sandbox.images import PullConfig

HELP = """Pull the image of every task (each distinct image once; present ones are skipped) with the user's docker
credentials, N at a time, from --registry when given. Writes one record per image (image, registry, status
present|pulled|error, bytes, seconds, error) and exits 1 when any image could not be had. A row whose image is
not a valid reference gets an error record naming its line and is never sent to the engine (exit 4 when that is
the only failure). With --ray every node of the cluster pulls into its own engine, and each record also names its
node."""


def register(app: typer.Typer) -> None:
    app.command("pull", help=HELP)(_pull)


@boundary("tasks pull")
@config_options(PullConfig)
def _pull(
    inputs: INPUTS = None,
    output: OUTPUT = None,
    config: CONFIG = None,
    flags: Flags | None = None,
    ray: RAY = None,
    sandbox: Annotated[
        str, typer.Option(help="Engine the images are pulled into: docker or podman.")
    ] = DEFAULT_BACKEND,
) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from swerl_cli.core.config import resolve_config
    from swerl_cli.core.errors import RowsFailedError
    from swerl_cli.executor import open_executor, ray_address
    from swerl_cli.sandbox import create
    from swerl_cli.sandbox.image_names import task_images
    from swerl_cli.streams.jsonl import read_many
    from swerl_cli.streams.outputs import open_output
    from swerl_cli.tasks.pull import PullTally, images_of, pull_images

    cfg = resolve_config(PullConfig, config, **(flags or {}))
    # The backend's own image options (mirror, budget; a pull command always pulls), built once for every node.
    backend = create(sandbox, registry=cfg.registry, image_budget_gb=cfg.image_budget_gb, pull=True)
    refs, refused = images_of(read_many(inputs or []))
    todo = task_images(refs, cfg.registry)
    address = ray_address(ray)
    executor = open_executor(address, cfg.workers) if address else None  # joined before any output
    bar = Progress(
        TextColumn("tasks pull"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.description}"), console=err_console, transient=True,
    )  # fmt: skip

    def log(msg: str) -> None:  # the bar shows pull progress; evictions and failures get a line
        if not msg.startswith(("pulling ", "pulled ")):
            bar.console.print(f"swerl tasks pull: {msg}")

    backend.log = log
    tally = PullTally()
    t0 = time.monotonic()
    with open_output(output, "replace", inputs=inputs or []) as out, bar:
        job = bar.add_task("", total=len(todo))
        for rec in refused:
            out.write(rec)
            log(str(rec["error"]))

        def done(rec: dict) -> None:
            out.write(rec)
            tally.add(rec)
            if rec["status"] == "error":
                log(rec["error"])
            bar.update(job, advance=1, description=tally.progress())

        if executor is not None:  # every node pulls into its own engine; its records come back when it is done
            bar.update(job, total=None, description=f"pulling {len(todo)} images on every node of the cluster")
        pull_images(todo, cfg.workers, backend, executor, done)
    err_console.print(f"swerl tasks pull: {tally.summary(len(todo), time.monotonic() - t0, executor is not None)}")
    if tally.counts["error"]:
        raise typer.Exit(1)
    if refused:
        raise RowsFailedError(
            len(refused), len(refused) + len(todo), str(refused[0]["error"]), what="rows name no valid image"
        )
