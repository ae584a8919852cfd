"""`swerl eval`: pass@1 +- SEM, pass@k and breakdowns over graded records, one column per input file."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from swerl_cli.cli._common import INPUTS, boundary, err_console
from swerl_cli.core.errors import UsageError, require_modules
from swerl_cli.evaluation.compare import Comparison, compare_files
from swerl_cli.evaluation.metrics import Report, evaluate_file, plot_reports, short_labels
from swerl_cli.streams.outputs import open_output, refuse_own_input

HELP = """Report pass@1 and pass@k over graded records (grade.status, grade.resolved), one column per input file.

pass@1 is the mean resolved over samples +- SEM (sample std / sqrt(n) of the 0/1 outcomes). pass@k uses the
unbiased estimator 1 - C(n-c,k)/C(n,k) per task (instance_id), averaged over tasks with n >= k; tasks with
n < k are excluded from that k and counted. Infra errors (grade.status == error) are reported and excluded
unless --errors-as-failures. Tables go to stderr (stdout when it is a terminal and --json is absent).
--compare A B lists, instance by instance, where two graded runs agree on grade.resolved (e.g. the SWE-bench
harness's results, converted by `swerl convert`, against swerl's grading of the same predictions)."""


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
) -> None:
    files = files or ["-"]
    if plot:
        require_modules("matplotlib")
        refuse_own_input("--plot", plot, files)
    if compare and (len(files) != 2 or files.count("-") > 1):
        raise UsageError(f"--compare needs exactly two inputs (A B); got {len(files)}")
    reports = [evaluate_file(f, errors_as_failures=errors_as_failures) for f in files]
    cmp = compare_files(files[0], files[1]) if compare else None
    if as_json:
        with open_output(None) as out:
            for rep in reports:
                out.write(rep.to_json())
            if cmp is not None:
                out.write(cmp.to_json())
    console = Console(highlight=False, markup=False) if sys.stdout.isatty() and not as_json else err_console
    _print_tables(console, reports)
    if cmp is not None:
        _print_compare(console, cmp)
    if plot:
        plot_reports(reports, plot)
        err_console.print(f"eval: wrote {plot}")


def _fmt(x: float | int | None, digits: int = 3) -> str:
    if x is None or x != x:
        return "-"
    return f"{x:.{digits}f}" if isinstance(x, float) and not float(x).is_integer() else f"{x:g}"


def _print_tables(console: Console, reports: list[Report]) -> None:
    labels = short_labels([r.source for r in reports])
    main = Table(title="swerl eval")
    _columns(main, "metric", labels, ["samples (errors)"])
    main.add_row("samples (errors)", *[f"{r.samples} ({r.errors})" for r in reports])
    main.add_row("tasks", *[str(r.tasks) for r in reports])
    main.add_row("pass@1 ± SEM", *[f"{_fmt(r.pass1)} ± {_fmt(r.pass1_sem)}" for r in reports])
    for k in range(2, max((max(r.pass_at_k, default=0) for r in reports), default=0) + 1):
        cells = []
        for r in reports:
            excl = r.pass_at_k_excluded.get(k, r.tasks)
            cells.append("-" if k not in r.pass_at_k else _fmt(r.pass_at_k[k]) + (f" ({excl} excl.)" if excl else ""))
        main.add_row(f"pass@{k}", *cells)
    for name in ("turns", "tokens"):
        for stat in ("mean", "p50", "p90", "max"):
            main.add_row(f"{name} {stat}", *[_fmt(getattr(r, name).get(stat), 1) for r in reports])
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
                cells.append("-" if row is None else f"{row['resolved']}/{row['n']} ({_fmt(row['rate'])})")
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
        f"{b}; agreement {_fmt(rate) if rate is not None else '-'}"
    )
