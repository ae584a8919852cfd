"""`swerl filter`: keep the records that pass the given predicates and group rules."""

from __future__ import annotations

from typing import Annotated

import typer

from swerl_cli.cli._common import INPUT, OUTPUT, boundary, err_console
from swerl_cli.cli._flags import Flags, config_options
from swerl_cli.core.errors import ConfigError, UsageError
from swerl_cli.filtering.select import FilterSpec, filter_stream
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
@config_options(FilterSpec, defaults=True)
def _filter(
    input: INPUT = "-",
    output: OUTPUT = None,
    flags: Flags | None = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No 'kept N of M' summary on stderr.")] = False,
) -> None:
    try:
        spec = FilterSpec(**(flags or {}))
    except ConfigError as e:  # every rule is a flag: a bad one is a usage error (exit 2), its message names it
        raise UsageError(str(e)) from None
    with open_output(output, "replace", flush_each=is_live_input(input), inputs=[input]) as out:
        result = filter_stream(input, spec, out.write_line)
    if not quiet:
        how = " (input not grouped: two passes)" if result.two_pass else ""
        err_console.print(f"filter: kept {result.kept} of {result.read}{how}")
