"""`swerl convert`: bring other agents' trajectories in; send swerl results out to the SWE-bench harness."""

from __future__ import annotations

from typing import Annotated

import typer

from swerl_cli.cli._common import OUTPUT, boundary, err_console
from swerl_cli.convert.registry import FORMATS

HELP = """Convert trajectories between swerl and other tools. --from FORMAT (SWE-agent .traj, mini-swe-agent
.traj.json, OpenHands output.jsonl, SFT rows with messages + instance_id, SWE-bench predictions: preds.json,
all_preds.jsonl, .pred; auto detects) writes one swerl trajectory record per source trajectory, ready for grade,
filter and rft. The SWE-bench harness's run summary ({model}.{run_id}.json) and report.json files (or their
logs/run_evaluation directory) become graded records for eval and report. --to swebench-preds (JSONL) or
preds-json (one {instance_id: prediction} object) turns swerl trajectory or graded records, or prediction rows,
into SWE-bench predictions, each model_patch kept. swerl's own records are recognised by their schema tag and
pass through as they are (--from swerl: read only those and prediction rows). An unusable file or row costs one
stderr line (FILE:LINE: field ...) and the rest still converts, then the exit code is 4; --strict stops at the
first (exit 3, -o untouched). A file whose first 5 lines are none of them a JSON object (a binary, a parquet) is
not JSON Lines: one line for the whole file (with --from swerl it stops the run, exit 3)."""


def register(app: typer.Typer) -> None:
    app.command("convert", help=HELP)(_convert)


@boundary("convert")
def _convert(
    inputs: Annotated[
        list[str] | None, typer.Argument(metavar="FILES...", help="Source files or directories ('-': stdin).")
    ] = None,
    source: Annotated[
        str,
        typer.Option(
            "--from",
            "--format",
            metavar="FORMAT",
            help=f"{', '.join(('auto', *FORMATS, 'swerl'))}.",
        ),
    ] = "auto",
    target: Annotated[
        str, typer.Option("--to", metavar="FORMAT", help="swerl, swebench-preds or preds-json.")
    ] = "swerl",
    output: OUTPUT = None,
    tasks: Annotated[
        str | None, typer.Option(metavar="FILE", help="Task records: embed each trajectory's task.")
    ] = None,
    run: Annotated[str | None, typer.Option(help="Run name in ids [default: the source format].")] = None,
    actions: Annotated[
        str, typer.Option(metavar="MODE", help="swerl: rewrite shell actions to swerl's format; keep: leave them.")
    ] = "swerl",
    model_name: Annotated[
        str | None,
        typer.Option(
            help="model_name_or_path of predictions [default: a row's model_name_or_path, else policy.model, else "
            "run]; policy.model of harness results [default: the log folder's model name with __ read as /, which "
            "mangles a name that holds __ itself: set it here]."
        ),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Stop at the first unusable file or row.")] = False,
) -> None:
    from swerl_cli.convert import OUTPUTS, convert_paths, unique_records, write_target
    from swerl_cli.convert.usable import usable, usable_records
    from swerl_cli.core.errors import EXIT_ROWS_FAILED, InputError, UsageError
    from swerl_cli.grading.jobs import load_tasks
    from swerl_cli.streams.jsonl import read_records
    from swerl_cli.streams.outputs import open_output
    from swerl_cli.streams.records import Located

    if source not in ("auto", "swerl", *FORMATS):
        raise UsageError(f"--from must be auto, swerl or one of {', '.join(FORMATS)}; got {source!r}")
    if target not in OUTPUTS:
        raise UsageError(f"--to must be one of {', '.join(OUTPUTS)}; got {target!r}")
    if actions not in ("swerl", "keep"):
        raise UsageError(f"--actions must be swerl or keep; got {actions!r}")
    if source == "swerl" and target == "swerl":
        raise UsageError("--from swerl needs --to swebench-preds or preds-json")
    task_map = load_tasks(read_records(tasks)) if tasks else None
    bad = 0

    def skip(err: InputError) -> None:
        """An unusable file or row: one stderr line and on to the next (exit 4 at the end); --strict stops."""
        nonlocal bad
        if strict:
            raise err
        bad += 1
        err_console.print(f"swerl convert: {err}")

    if source == "swerl":
        records = unique_records(usable_records(inputs or ["-"], model_name, skip))
    else:
        if not inputs:
            raise UsageError(
                "name the files or directories to convert ('-' reads OpenHands, SFT or prediction rows from stdin)"
            )

        def converted():
            rewrite = actions == "swerl"
            for rec in convert_paths(inputs, source, tasks=task_map, run=run, rewrite=rewrite, model=model_name):
                if isinstance(rec, dict):
                    rec = Located(rec["source"]["file"], rec["source"]["line"] or 0, rec)
                elif isinstance(rec, Located) and target != "swerl":  # a swerl record: as --from swerl takes it
                    rec = usable(rec, model_name)
                if isinstance(rec, InputError):
                    skip(rec)
                    continue
                yield rec

        records = converted()
    with open_output(output, "replace", inputs=[*(inputs or []), *([tasks] if tasks else [])]) as out:
        written = write_target(out, records, target, model_name)
    err_console.print(f"swerl convert: {written} written, {bad} skipped")
    if bad:
        raise typer.Exit(EXIT_ROWS_FAILED)  # the rest was written; the code says some rows were refused
