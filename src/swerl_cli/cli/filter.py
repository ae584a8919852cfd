"""`swerl filter`: keep the records that pass the given predicates and group rules."""

from __future__ import annotations

from typing import Annotated

import typer

from swerl_cli.cli._common import INPUT, OUTPUT, boundary, err_console
from swerl_cli.filtering.select import FilterSpec, filter_stream, parse_solve_rate
from swerl_cli.streams.jsonl import is_live_input
from swerl_cli.streams.outputs import open_output

HELP = """Keep the records that pass every given rule; kept lines are written byte-for-byte, in input order.

Group statistics (--group-mixed, --solve-rate) are computed over every record of a (run, instance_id) group,
then record rules apply, then --dedupe and --per-task over the group's surviving records. Record rules stream
(memory holds only the ids seen: an id twice in the input is an error, exit 3). Group rules hold one group at
a time; input in any order is handled (a group that reappears switches to two passes over the input or a
spooled copy of stdin), and their output is written when the input ends unless --grouped promises grouped
input (then each group is written as it closes).
A field a rule needs that is missing or of the wrong type is an error (exit 3) naming file, line and field.

Example: swerl filter runs.jsonl --where 'stats.turns < 40 and grade.status == "resolved"'"""


def register(app: typer.Typer) -> None:
    app.command("filter", help=HELP)(_filter)


@boundary("filter")
def _filter(
    input: INPUT = "-",
    output: OUTPUT = None,
    status: Annotated[
        list[str] | None, typer.Option(metavar="STATUS", help="Keep grade.status equal to this (repeatable).")
    ] = None,
    resolved: Annotated[
        bool | None, typer.Option("--resolved/--unresolved", help="Keep grade.resolved true / false.")
    ] = None,
    exit_status: Annotated[
        list[str] | None, typer.Option(metavar="EXIT", help="Keep this exit_status (repeatable).")
    ] = None,
    max_turns: Annotated[int | None, typer.Option(metavar="N", help="Keep stats.turns <= N.")] = None,
    max_tokens: Annotated[int | None, typer.Option(metavar="N", help="Keep stats.tokens_total <= N.")] = None,
    min_reward: Annotated[
        float | None,
        typer.Option(metavar="X", help="Keep grade.reward >= X (a null reward, i.e. an infra error, never passes)."),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(
            metavar="EXPR",
            help="Expression over dotted fields: == != < <= > >= in, and/or/not, parentheses, "
            'literals 1 2.5 "s" true false null [..]. A missing field is null; ordering '
            "mixed types is false. See docs/records.md.",
        ),
    ] = None,
    group_mixed: Annotated[
        bool,
        typer.Option(
            "--group-mixed", help="Keep only groups whose non-null rewards are not all equal (DAPO dynamic sampling)."
        ),
    ] = False,
    reward_field: Annotated[
        str, typer.Option(metavar="FIELD", help="Dotted field --group-mixed compares.")
    ] = "grade.reward",
    solve_rate: Annotated[
        str | None,
        typer.Option(
            metavar="LO:HI",
            help="Keep groups whose solve rate (resolved / samples, infra errors excluded) is in [LO, HI].",
        ),
    ] = None,
    dedupe: Annotated[
        bool, typer.Option("--dedupe", help="Drop records whose patch repeats an earlier one in its group.")
    ] = False,
    per_task: Annotated[
        int | None, typer.Option(metavar="N", help="Keep at most N records per group (the first N).")
    ] = None,
    grouped: Annotated[
        bool,
        typer.Option(
            "--grouped",
            help="Input is grouped by (run, instance_id): stream group rules; a reappearing group is an error.",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No 'kept N of M' summary on stderr.")] = False,
) -> None:
    spec = FilterSpec(
        status=tuple(status or ()),
        resolved=resolved,
        exit_status=tuple(exit_status or ()),
        max_turns=max_turns,
        max_tokens=max_tokens,
        min_reward=min_reward,
        where=where,
        group_mixed=group_mixed,
        reward_field=reward_field,
        solve_rate=parse_solve_rate(solve_rate) if solve_rate is not None else None,
        dedupe=dedupe,
        per_task=per_task,
        grouped=grouped,
    )
    with open_output(output, "replace", flush_each=is_live_input(input), inputs=[input]) as out:
        result = filter_stream(input, spec, out.write_line)
    if not quiet:
        how = " (input not grouped: two passes)" if result.two_pass else ""
        err_console.print(f"filter: kept {result.kept} of {result.read}{how}")
