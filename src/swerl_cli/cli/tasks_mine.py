"""`swerl tasks mine`: task records from a local git repository's fix commits (registered on `swerl tasks`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from swerl_cli.cli._common import APPEND_OUTPUT, boundary, err_console

HELP = """Mine task records from a local git repository's history: every non-merge commit that changes test files
and source files (at most --max-files source files, fewer than --max-lines changed source lines) becomes a
candidate with base_commit = its parent, patch = the source diff, test_patch = the test diff. An image with the
repository at the base commit is built from --base without network; the tests run --repeats times before and
after the fix in fresh sandboxes. Tasks with no FAIL_TO_PASS, or with a test whose outcome changes across
repeats, are dropped and counted. Records are written and flushed as they finish; -o FILE --resume continues."""


def register(app: typer.Typer) -> None:
    app.command("mine", help=HELP)(_mine)


def _opt(help: str, *names: str, metavar: str | None = None) -> typer.models.OptionInfo:
    return typer.Option(*names, help=help, metavar=metavar)


@boundary("tasks mine")
def _mine(
    repo: Annotated[str, typer.Argument(metavar="REPO", help="Path of a local git repository (full history).")],
    output: APPEND_OUTPUT = None,
    resume: Annotated[bool, _opt("With -o: skip commits whose task is already in the file.", "--resume")] = False,
    rev: Annotated[str, _opt("Walk the history from this revision.", metavar="REV")] = "HEAD",
    since: Annotated[str | None, _opt("Only commits after this date (git's --since).", metavar="DATE")] = None,
    until: Annotated[str | None, _opt("Only commits before this date (git's --until).", metavar="DATE")] = None,
    max_commits: Annotated[int | None, _opt("Look at the newest N commits only.", metavar="N")] = None,
    max_files: Annotated[int, _opt("Most source files a fix may touch.", metavar="N")] = 7,
    max_lines: Annotated[int, _opt("A fix changes fewer source lines than this.", metavar="N")] = 500,
    repeats: Annotated[int, _opt("Test runs before and after each fix (flaky tests drop).", metavar="N")] = 2,
    workers: Annotated[int, _opt("Candidates evaluated in parallel.", metavar="N")] = 1,
    timeout_s: Annotated[float, _opt("Timeout of one test run in seconds.", metavar="S")] = 600.0,
    base: Annotated[str, _opt("Base image the repository image is built on.", metavar="IMAGE")] = "swerl-base",
    setup: Annotated[
        list[str] | None, _opt("Command run in /testbed after checkout (repeatable), e.g. 'pip install -e .'.")
    ] = None,
    network: Annotated[bool, _opt("Give the setup commands a network.", "--network/--no-network")] = False,
    test_cmd: Annotated[
        str | None, _opt("Test command; {files} becomes the commit's test files [default: pytest -rA ...].")
    ] = None,
    name: Annotated[str | None, _opt("Prefix of instance ids [default: the directory name].")] = None,
    repo_name: Annotated[str | None, _opt("The tasks' repo field [default: local/NAME].")] = None,
    issues: Annotated[
        str | None, _opt("JSONL of {commit, problem_statement}: issue texts instead of commit messages.")
    ] = None,
) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from swerl_cli.streams.outputs import open_output
    from swerl_cli.tasks.mining import PYTEST, MineConfig, MineStats, list_commits, mine_records

    cfg = MineConfig(
        rev=rev, since=since, until=until, max_commits=max_commits, max_files=max_files, max_lines=max_lines,
        repeats=repeats, workers=workers, timeout_s=timeout_s, base_image=base, setup=tuple(setup or ()),
        network=network, test_cmd=test_cmd or PYTEST + " {files}", name=name, repo_name=repo_name, issues=issues,
    )  # fmt: skip
    list_commits(repo, cfg)  # a bad repository or revision fails here, before -o is touched
    stats = MineStats()
    progress = Progress(
        TextColumn("mine"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
        console=err_console, transient=True, disable=not err_console.is_terminal,
    )  # fmt: skip
    bar = progress.add_task("", total=None)

    def on_event(kind: str, payload: Any) -> None:
        nonlocal stats
        if kind == "candidates":
            n, stats = payload
            progress.update(bar, total=n)
        elif kind == "image":
            tag, how = payload
            err_console.print(f"image {tag}: {how}")
        elif kind == "dropped":
            iid, why = payload
            progress.advance(bar)
            err_console.print(f"dropped {iid}: {why}")
        elif kind == "task":
            progress.advance(bar)
            progress.update(bar, description=str(payload))

    issue_files = [issues] if issues else []
    with open_output(output, "append", resume=resume, inputs=issue_files, id_key="instance_id") as out, progress:
        for rec in mine_records(repo, cfg, done_ids=out.done_ids, on_event=on_event):
            out.write(rec)
            err_console.print(f"mined {rec['instance_id']}: {len(rec['FAIL_TO_PASS'])} FAIL_TO_PASS, "
                              f"{len(rec['PASS_TO_PASS'])} PASS_TO_PASS")  # fmt: skip
    err_console.print(f"swerl tasks mine: {stats.summary()}")
