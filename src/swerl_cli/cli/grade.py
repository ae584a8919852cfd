"""`swerl grade`: grade trajectories (or SWE-bench predictions) by running the task's tests in fresh sandboxes."""

from __future__ import annotations

from typing import Annotated

import orjson
import typer

from swerl_cli.cli._common import APPEND_OUTPUT, CONFIG, INPUTS, boundary, check_output_target, err_console
from swerl_cli.cli._flags import Flags, config_options
from swerl_cli.cli._images import report_images, resolve_job_config
from swerl_cli.executor import node_label, open_executor
from swerl_cli.grading.grade import GradeConfig
from swerl_cli.grading.jobs import grade_records, load_tasks
from swerl_cli.grading.summary import GradeSummary
from swerl_cli.streams.jsonl import read_many_rows, read_rows
from swerl_cli.streams.outputs import open_output, refuse_own_input
from swerl_cli.streams.task_fields import RowFailures

HELP = """Grade each record in a fresh sandbox: apply its patch, set aside its edits of test infrastructure
(conftest.py, runner config, test files, plugins: grade.set_aside), apply the task's test_patch, run test_cmd
through the grader's wrapper and pytest plugin (a signed result the code under test cannot reach; other runners: the
task's log parser) and add a `grade` object (status resolved|unresolved|patch_failed|error; reward null on error). A
run the patch broke (timeout, crash, no or untrusted result) is unresolved with reward 0 and grade.reason when the
unpatched repository's control run gives results, else an error; grade.audit flags patches that touched test
infrastructure, tripped the guard or wrote outside the repository. Input: trajectory records, or SWE-bench
prediction rows (instance_id, model_name_or_path, model_patch) with --tasks, as JSONL, a JSON array or a preds.json
object {instance_id: {...}}. A task's missing image is pulled (--registry: from a mirror). With --workers N, records
are written as they finish (the order may differ from the input; `id` identifies each) and flushed one by one; with
-o the file is written in place so an interrupted run keeps every finished record (--resume continues it)."""


def register(app: typer.Typer) -> None:
    app.command("grade", help=HELP)(_grade)


@boundary("grade")
@config_options(GradeConfig)
def _grade(
    inputs: INPUTS = None,
    output: APPEND_OUTPUT = None,
    config: CONFIG = None,
    tasks: Annotated[str | None, typer.Option(metavar="FILE", help="Task records for prediction rows.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="With -o: skip ids already in the output file.")] = False,
    report: Annotated[str | None, typer.Option(metavar="FILE", help="Write a SWE-bench-style summary JSON.")] = None,
    flags: Flags | None = None,
) -> None:
    cfg = resolve_job_config(GradeConfig, config, flags)
    report_images(cfg, "grade")
    task_map = load_tasks(read_rows(tasks)) if tasks else None
    summary = GradeSummary()
    skipped: list[str] = []
    inputs = inputs or []
    if report:  # before any grading: a --report that is an input (or the -o file) is refused, nothing touched
        check_output_target("--report", report)
        refuse_own_input("--report", report, [*inputs, *([tasks] if tasks else []), *([output] if output else [])])
    # The cluster is joined before the output is touched: an unreachable one writes nothing.
    executor = open_executor(cfg.ray, cfg.workers, cfg.placement(), name="swerl-grade")
    failures = RowFailures()
    with open_output(output, "append", resume=resume, inputs=[*(inputs or ["-"]), *([tasks] if tasks else [])]) as out:
        for loc in out.previous():
            summary.add(loc.obj)
            failures.add(loc.obj)
        records = grade_records(
            read_many_rows(inputs),
            cfg,
            tasks=task_map,
            skip_ids=out.done_ids,
            on_skip=skipped.append,
            executor=executor,
        )
        for rec in records:
            out.write(rec)
            summary.add(rec)
            failures.add(rec)
            g = rec["grade"]
            msg = f" ({g['error']})" if g.get("error") else ""
            where = f" on {node_label(g.get('node'))}" if cfg.ray else ""
            err_console.print(f"graded {rec['id']}: {g['status']} in {g['duration_s']:.1f}s{where}{msg}")
    if report:
        with open_output(report, "replace", inputs=inputs) as rep:
            rep.write_line(orjson.dumps(summary.to_json(), option=orjson.OPT_INDENT_2) + b"\n")
    s = summary.to_json()
    err_console.print(
        f"swerl grade: {out.count} graded ({len(skipped)} skipped), {s['resolved_instances']} resolved of "
        f"{s['total_instances']} in the output, {s['error_instances']} errors"
    )
    failures.check()  # exit 4 when some rows were refused (each has its error record)
