"""`swerl eval`: pass@1 +- SEM, pass@k and breakdowns over graded records, one column per input file."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from swerl_cli.cli._common import INPUTS, boundary, err_console
from swerl_cli.cli._paths import check_output_target
from swerl_cli.core.errors import UsageError, require_modules
from swerl_cli.evaluation.compare import Comparison, verdicts
from swerl_cli.evaluation.compare import compare as compare_runs
from swerl_cli.evaluation.metrics import Report, evaluate, short_labels
from swerl_cli.evaluation.paired import KEYS, Paired, paired, source_label
from swerl_cli.evaluation.plot import plot_format, plot_formats, render_plot
from swerl_cli.evaluation.tables import FORMATS, max_k, paired_cells, render, report_cells
from swerl_cli.evaluation.tables import fmt as fmt_num
from swerl_cli.streams.jsonl import read_records
from swerl_cli.streams.outputs import open_output, refuse_own_input
from swerl_cli.streams.records import Located

HELP = """Report pass@1 and pass@k over graded records (grade.status, grade.resolved), one column per input file.

pass@1 is the mean resolved over samples +- SEM (sample std / sqrt(n) of the 0/1 outcomes). pass@k uses the
unbiased estimator 1 - C(n-c,k)/C(n,k) per task (instance_id), averaged over tasks with n >= k; tasks with
n < k are excluded from that k and counted. Infra errors (grade.status == error) are reported and excluded
unless --errors-as-failures. Tables go to stderr (stdout when it is a terminal and --json is absent).
--compare A B lists, instance by instance, where two graded runs agree on grade.resolved (e.g. the SWE-bench
harness's results, converted by `swerl convert`, against swerl's grading of the same predictions).
--paired A B compares two runs evaluated on the same (task, sample seed) pairs, pair by pair: the mean paired
difference B - A with its SE and z, the discordant pairs and McNemar's exact p (two-sided, and one-sided for
B > A), beside each side's unpaired pass@1 +- SEM; episodes on one side only are listed, pairs with an infra error
on either side are excluded and counted (--errors-as-failures does not apply to it). --format markdown|csv
prints the same metrics as plain text on stdout, pipe or file alike, one row per input (and the --compare and
--paired blocks after a blank line), for papers and spreadsheets: the one exception to records-only stdout, so
it cannot go with --json."""


def register(app: typer.Typer) -> None:
    app.command("eval", help=HELP)(_eval)


@boundary("eval")
def _eval(
    files: INPUTS = None,
    as_json: Annotated[bool, typer.Option("--json", help="Write one swerl.eval/1 record per input to stdout.")] = False,
    plot: Annotated[
        str | None,
        typer.Option(metavar="FILE.png", help="Plot pass@k curves (one input) or metrics across inputs (several)."),
    ] = None,
    errors_as_failures: Annotated[
        bool, typer.Option("--errors-as-failures", help="Count infra errors as unresolved samples.")
    ] = False,
    compare: Annotated[
        bool, typer.Option("--compare", help="With two inputs: compare their verdicts instance by instance.")
    ] = False,
    paired_: Annotated[
        bool,
        typer.Option(
            "--paired", help="With two inputs A B: paired statistics of B against A (with --json: swerl.paired/1)."
        ),
    ] = False,
    pair_on: Annotated[
        str,
        typer.Option(
            metavar="auto|seed|sample",
            help="--paired key beside instance_id: policy.sampling.seed, sample, or auto (the seed when every record "
            "has one).",
        ),
    ] = "auto",
    fmt: Annotated[
        str,
        typer.Option(
            "--format", metavar="table|markdown|csv", help="table: rich tables; markdown, csv: plain text on stdout."
        ),
    ] = "table",
) -> None:
    files = files or ["-"]
    if fmt not in FORMATS:
        raise UsageError(f"--format: expected one of {', '.join(FORMATS)}; got {fmt!r}")
    if pair_on not in KEYS:
        raise UsageError(f"--pair-on: expected one of {', '.join(KEYS)}; got {pair_on!r}")
    if as_json and fmt != "table":
        raise UsageError(f"--format {fmt} prints text on stdout, --json records: give one of them")
    for flag, on in (("--compare", compare), ("--paired", paired_)):
        if on and (len(files) != 2 or files.count("-") > 1):
            raise UsageError(f"{flag} needs exactly two inputs (A B); got {len(files)}")
    image_format = _plot_format(plot, files) if plot else None
    records = _reader(files, twice=compare or paired_)
    reports = [evaluate(records(f), source_label(f), errors_as_failures=errors_as_failures) for f in files]
    a, b = files[0], files[-1]
    label_a, label_b = source_label(a), source_label(b)
    cmp = compare_runs(verdicts(records(a)), verdicts(records(b)), label_a, label_b) if compare else None
    pair = paired(records(a), records(b), label_a, label_b, key=pair_on) if paired_ else None
    if as_json:
        with open_output(None) as out:
            for rep in reports:
                out.write(rep.to_json())
            for extra in (cmp, pair):
                if extra is not None:
                    out.write(extra.to_json())
    if fmt != "table":
        sys.stdout.write(render(fmt, reports, cmp, pair))
        sys.stdout.flush()
    else:
        console = Console(highlight=False, markup=False) if sys.stdout.isatty() and not as_json else err_console
        _print_tables(console, reports)
        if cmp is not None:
            _print_compare(console, cmp)
        if pair is not None:
            _print_paired(console, pair)
    if plot and image_format:
        image = render_plot(reports, image_format)
        with open_output(plot, "replace", inputs=files) as out:  # the old plot stays whole until the new is written
            out.write_bytes(image)
        err_console.print(f"eval: wrote {plot}")


def _plot_format(plot: str, files: list[str]) -> str:
    """Before any input is read: --plot names a file (not a directory: `DIR/` wrote `DIR/.png`), not an input,
    with a suffix matplotlib can write (none: PNG)."""
    require_modules("matplotlib")
    check_output_target("--plot", plot)
    refuse_own_input("--plot", plot, files)
    found = plot_format(plot)
    if found is None:
        raise UsageError(
            f"--plot {plot}: cannot write a {Path(plot).suffix} image; use one of "
            + ", ".join("." + f for f in plot_formats())
            + " (or no suffix: PNG)"
        )
    return found


def _reader(files: list[str], *, twice: bool) -> Callable[[str], Iterable[Located]]:
    """path -> its records; stdin, which can be read once, is kept in memory when --compare/--paired read it again."""
    kept = list(read_records("-")) if twice and "-" in files else None
    return lambda path: kept if path == "-" and kept is not None else read_records(path)


def _print_tables(console: Console, reports: list[Report]) -> None:
    labels = short_labels([r.source for r in reports])
    main = Table(title="swerl eval")
    _columns(main, "metric", labels, ["samples (errors)"])
    per_input = [report_cells(r, max_k(reports)) for r in reports]
    for i, cell in enumerate(per_input[0]):
        main.add_row(cell.label, *[cells[i].text for cells in per_input])
    console.print(main)
    for title, attr in (("by repo", "by_repo"), ("by exit_status", "by_exit_status")):
        keys = sorted({k for r in reports for k in getattr(r, attr)})
        if not keys:
            continue
        table = Table(title=f"resolved {title}")
        _columns(table, title.removeprefix("by "), labels, keys)
        for key in keys:
            cells = []
            for r in reports:
                row = getattr(r, attr).get(key)
                cells.append("-" if row is None else f"{row['resolved']}/{row['n']} ({fmt_num(row['rate'])})")
            table.add_row(key, *cells)
        console.print(table)
    statuses = sorted({k for r in reports for k in r.by_status})
    table = Table(title="grade.status counts")
    _columns(table, "status", labels, statuses)
    for key in statuses:
        table.add_row(key, *[str(r.by_status.get(key, 0)) for r in reports])
    console.print(table)


def _columns(table: Table, first: str, labels: list[str], keys: list[str]) -> None:
    """The key column keeps its names whole (a repository name was cut to `swerl-examples/b…`): it is as wide as
    its longest key (up to 60), and the run columns give way, their headers folded onto more lines, never cut."""
    width = min(60, max((len(k) for k in [first, *keys]), default=0))
    table.add_column(first, no_wrap=True, min_width=width, overflow="fold")
    for label in labels:
        table.add_column(label, justify="right", overflow="fold")


def _print_compare(console: Console, cmp: Comparison) -> None:
    """One plain line per instance (ids are long: no table wrapping), disagreements first; the counts last."""
    a, b = short_labels([cmp.a, cmp.b])
    console.print(f"compare: A = {a}, B = {b}")
    order = {"disagree": 0, "error": 1, "only_a": 2, "only_b": 2, "agree": 3}
    names = {"only_a": "only A", "only_b": "only B"}
    width = max((len(r["instance_id"]) for r in cmp.rows), default=0)
    for row in sorted(cmp.rows, key=lambda r: order[r["verdict"]]):
        sa, sb = ("-" if s is None else s["status"] for s in (row["a"], row["b"]))
        verdict = names.get(row["verdict"], row["verdict"])
        console.print(f"  {verdict:<8}  {row['instance_id']:<{width}}  A {sa:<12}  B {sb}")
    c, rate = cmp.counts, cmp.agreement_rate
    console.print(
        f"compare: {c['agree']} agree ({c['both_resolved']} both resolved, {c['both_unresolved']} both unresolved), "
        f"{c['disagree']} disagree, {c['error']} with an error, {c['only_a']} only in {a}, {c['only_b']} only in "
        f"{b}; agreement {fmt_num(rate) if rate is not None else '-'}"
    )


def _print_paired(console: Console, pair: Paired) -> None:
    """A metric | value table, then one plain line per excluded or unpaired episode (never dropped silently)."""
    a, b = short_labels([pair.a, pair.b])
    table = Table(title=f"paired: B = {b} against A = {a}")
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right", overflow="fold")
    for cell in paired_cells(pair):
        table.add_row(cell.label, cell.text)
    console.print(table)
    for name, episodes in (("error", pair.error_pairs), ("only A", pair.only_in_a), ("only B", pair.only_in_b)):
        for ep in episodes:
            seed = "" if ep.seed is None else f" seed {ep.seed}"
            console.print(f"  {name:<7} {ep.view.instance_id} sample {ep.view.sample}{seed}  {ep.where}")
