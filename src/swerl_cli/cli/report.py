"""`swerl report`: curves across RL iterations, a per-task heat map and a trajectory viewer in one HTML file."""

from __future__ import annotations

from typing import Annotated

import typer

from swerl_cli.cli._common import boundary, err_console

HELP = """Write one self-contained HTML report (no network at view time) of an RL run or of graded files.

Inputs: an RL run directory in the layout of `make rl` (iter-k/graded.jsonl, eval-graded.jsonl, dapo.json,
metrics.jsonl, probe.json), or graded JSONL files, one iteration each, in the order given. The page shows pass@1 +-
SEM on the rollouts and the eval split, rewards with and without the step penalty, DAPO group/step/clip/logprob-gap
numbers, turns/tokens/exit-status/time per iteration, a learning curve per run directory (pool pass rate +- SE,
groups and samples kept, optimizer steps, submit share and precision, format errors per turn, and the probe of each
checkpoint: gold edit-turn log p, frame drift), a per-task solve-rate heat map, and a trajectory viewer that parses
a record only when it is selected (usable with 10,000 records)."""


def register(app: typer.Typer) -> None:
    app.command("report", help=HELP, short_help="Write an HTML report of an RL run or graded files.")(_report)


@boundary("report")
def _report(
    inputs: Annotated[
        list[str], typer.Argument(metavar="RUN_DIR_OR_FILES...", help="RL run directories or graded JSONL files.")
    ],
    output: Annotated[
        str, typer.Option("--output", "-o", metavar="FILE.html", help="Where to write the report.")
    ] = "report.html",
    title: Annotated[str | None, typer.Option(help="Page title (default: the inputs).")] = None,
    l_thr: Annotated[
        int | None, typer.Option(help="Step-penalty L_thr (default: the run's dapo.json, else 10).")
    ] = None,
    t_max: Annotated[
        int | None, typer.Option(help="Step-penalty T_max (default: the run's dapo.json, else 40).")
    ] = None,
    max_chars: Annotated[
        int, typer.Option(help="Longest message text kept per turn (head and tail), in characters.")
    ] = 6000,
) -> None:
    from swerl_cli.report.build import build_report
    from swerl_cli.report.page import render_page
    from swerl_cli.streams.outputs import open_output, refuse_own_input

    _check_numbers(max_chars, l_thr, t_max)
    # The output contract of every command (outputs.py): an input as output refused, a device or FIFO written in
    # place, a symlink written through to its target, a regular file replaced atomically when the page is done, a
    # directory or unwritable path one line. Opened before the (long) build, so those fail before it.
    read = _files_read(inputs)
    refuse_own_input("-o", output, read)  # an existing run file first, with every command's message
    _refuse_run_file(output, inputs)  # then the places a later report of the run would read
    with open_output(output, "replace", inputs=read) as out:
        data = build_report(inputs, l_thr=l_thr, t_max=t_max, max_chars=max_chars, title=title, log=err_console.print)
        page = render_page(data).encode()
        out.write_bytes(page)
    size = len(page) / 1e6
    err_console.print(
        f"report: {len(data.index)} records, {len(data.iterations)} iterations -> {output} ({size:.1f} MB)"
    )


def _check_numbers(max_chars: int, l_thr: int | None, t_max: int | None) -> None:
    """Values that mean nothing are usage errors (exit 2): a negative length, a penalty that starts before turn 0 or
    never ends (Eq. 4 divides by T_max - L_thr)."""
    from swerl_cli.core.errors import UsageError

    if max_chars < 0:
        raise UsageError(f"--max-chars: must be >= 0 (characters kept per message); got {max_chars}")
    if l_thr is not None and l_thr < 0:
        raise UsageError(f"--l-thr: must be >= 0 (the turn from which the step penalty applies); got {l_thr}")
    if t_max is not None and t_max < 1:
        raise UsageError(f"--t-max: must be >= 1 (the run's max turns); got {t_max}")
    if l_thr is not None and t_max is not None and t_max <= l_thr:
        raise UsageError(f"--t-max {t_max} must exceed --l-thr {l_thr} (the penalty divides by T_max - L_thr)")


def _files_read(inputs: list[str]) -> list[str]:
    """The files the report reads: each run directory's iter-k/ files (report.build.discover) and probes
    (report.curve.probe_paths), and the files given.

    A page written into its run directory (`make paper-mini`'s RUN/report.html) is not one of them, so the run can
    be reported again; an iteration file as the output is refused."""
    from swerl_cli.report.build import discover
    from swerl_cli.report.curve import probe_paths

    sources = discover(inputs)
    probes = [f for run in dict.fromkeys(s.run for s in sources if s.run) for f in probe_paths(run).values()]
    return [f for src in sources for f in (src.graded, src.eval, src.dapo, src.metrics) if f] + probes


# What a report of a run directory reads in it (report/build.discover, report/curve.probe_paths), present or not yet.
RUN_FILES = ("graded.jsonl", "eval-graded.jsonl", "dapo.json", "metrics.jsonl", "probe.json")


def _refuse_run_file(output: str, inputs: list[str]) -> None:
    """A UsageError (exit 2) when `-o` is a place where a report of one of the run directories given reads a run
    file: RUN/iter-k/graded.jsonl (eval-graded.jsonl, dapo.json, metrics.jsonl, probe.json) for any k, whether the
    iteration is there or not yet (the page would be read back as that iteration by every later `swerl report
    RUN`), and the rft/probe.json beside a dapo-sN seed directory. Symlinks are resolved on both sides."""
    import os
    import re
    from pathlib import Path

    from swerl_cli.core.errors import UsageError

    target = Path(os.path.realpath(output))
    for run in inputs:
        if not Path(run).is_dir():
            continue
        root = Path(os.path.realpath(run))
        rel = target.relative_to(root).parts if target.is_relative_to(root) else ()
        if len(rel) == 2 and re.fullmatch(r"iter-\d+", rel[0]) and rel[1] in RUN_FILES:
            what = "/".join(rel)
        elif re.fullmatch(r"dapo-s\d+", root.name) and target == root.parent / "rft" / "probe.json":
            what = "../rft/probe.json, its seed's first probe"  # report/curve.probe_paths, k = 0
        else:
            continue
        raise UsageError(
            f"-o {output} is a run file a report of {run} reads ({what}): every later report of the run would read "
            f"this page back; write it elsewhere (e.g. {Path(run) / 'report.html'})"
        )
