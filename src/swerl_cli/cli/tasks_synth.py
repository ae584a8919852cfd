"""`swerl tasks synth`: SWE-smith-style tasks from any Python repository with tests (registered on `swerl tasks`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from swerl_cli.cli._common import boundary, err_console
from swerl_cli.cli._paths import make_output_dir

HELP = """Make SWE-smith-style tasks from a Python repository with tests: mutate functions (comparison and operator
flips, off-by-one, dropped conditions, swapped arguments), keep each mutant that makes at least one passing test
fail without breaking collection, with FAIL_TO_PASS / PASS_TO_PASS from real test runs in the repository's image
(built as `swerl tasks build` does), a problem statement from the failing test's report and the reverse diff as
the gold patch. Tasks are validated (gold resolves, empty does not) and split by function into OUT/train.jsonl
and OUT/heldout.jsonl; OUT/stats.json counts candidates, kept and rejected per mutator."""


def register(app: typer.Typer) -> None:
    app.command("synth", help=HELP)(_synth)


def _opt(help: str, *names: str, metavar: str | None = None) -> Any:
    return typer.Option(*names, help=help, metavar=metavar)


@boundary("tasks synth")
def _synth(
    repo: Annotated[str, typer.Argument(metavar="REPO", help="Directory of a Python repository with pytest tests.")],
    out: Annotated[
        str, _opt("Directory for train.jsonl, heldout.jsonl, stats.json, the bundle.", "--out", "-o", metavar="DIR")
    ],
    name: Annotated[
        str | None, _opt("Name in ids and the image [default: REPO's directory name].", metavar="NAME")
    ] = None,
    mutators: Annotated[str | None, _opt("Comma-separated mutators [default: all].", metavar="LIST")] = None,
    files: Annotated[
        list[str] | None, _opt("Mutate only files matching this glob (repeatable).", metavar="GLOB")
    ] = None,
    tests: Annotated[
        list[str] | None, _opt("Test path given to pytest (repeatable) [default: pytest's discovery].", metavar="PATH")
    ] = None,
    test_cmd: Annotated[
        str | None, _opt("Whole test command [default: pytest -rA --tb=short ... TESTS].", metavar="CMD")
    ] = None,
    per_function: Annotated[int, _opt("Most tasks from one function.", metavar="N")] = 1,
    tries: Annotated[int, _opt("Most mutants run per function.", metavar="N")] = 3,
    max_tasks: Annotated[int | None, _opt("Stop after N kept tasks.", metavar="N")] = None,
    holdout: Annotated[float, _opt("Share of functions held out for evaluation.", metavar="FRAC")] = 0.25,
    seed: Annotated[int, _opt("Seed of the candidate order and of the split.", metavar="N")] = 0,
    workers: Annotated[int, _opt("Sandboxes in parallel.", metavar="N")] = 1,
    timeout_s: Annotated[
        float | None, _opt("Timeout of one test run [default: 10x the slower baseline run, at least 30].", metavar="S")
    ] = None,
    base: Annotated[str, _opt("Base image the repository image is built on.", metavar="IMAGE")] = "swerl-base",
    setup: Annotated[
        list[str] | None, _opt("Command run in /testbed when the image is built (repeatable).", metavar="CMD")
    ] = None,
    validate: Annotated[int, _opt("Gold and empty runs per task before it is written (0: none).", metavar="R")] = 1,
    located: Annotated[
        bool, _opt("Keep only mutants whose statement's traceback shows the mutated line (FILE:LINE).", "--located")
    ] = False,
) -> None:
    import time

    from swerl_cli.tasks.synth.mutators import MUTATORS
    from swerl_cli.tasks.synth.run import SynthConfig, synthesize

    cfg = SynthConfig(
        name=name, mutators=tuple(m.strip() for m in mutators.split(",")) if mutators else MUTATORS,
        files=tuple(files or ()), tests=tuple(tests or ()), test_cmd=test_cmd, per_function=per_function,
        tries=tries, max_tasks=max_tasks, holdout=holdout, seed=seed, workers=workers, timeout_s=timeout_s,
        base_image=base, setup=tuple(setup or ()), validate=validate, located=located,
    )  # fmt: skip
    dest = make_output_dir("--out", out)
    t0 = time.monotonic()
    summary: dict[str, Any] = {}

    def on_event(kind: str, payload: Any) -> None:
        if kind == "image":
            err_console.print(f"image {payload[0]}: {payload[1]}")
        elif kind == "baseline":
            err_console.print(f"baseline: {payload[0]} tests pass in both runs; test timeout {payload[1]:.0f}s")
        elif kind == "candidates":
            err_console.print(f"{payload[0]} mutations in {payload[1]} functions; trying up to {payload[2]}")
        elif kind == "rejected":
            err_console.print(f"rejected {payload[0]}: {payload[1]}")
        elif kind == "kept":
            err_console.print(f"kept {payload}")
        elif kind == "validated" and not payload[1]["valid"]:
            err_console.print(f"invalid {payload[0]}: gold {payload[1]['gold_statuses']}, empty "
                              f"{payload[1]['empty_statuses']} {'; '.join(payload[1]['errors'])}")  # fmt: skip
        elif kind == "stats":
            summary.update(payload.to_json())

    result = synthesize(repo, dest, cfg, on_event)
    _write(dest, result, summary)
    rows = summary.get("per_mutator", {})
    kept = ", ".join(f"{k} {v.get('kept', 0)}/{v.get('probed', 0)}" for k, v in sorted(rows.items()))
    err_console.print(
        f"swerl tasks synth: {len(result['train'])} train, {len(result['heldout'])} held-out tasks in "
        f"{time.monotonic() - t0:.0f}s (kept/probed: {kept or 'none'}; invalid: {summary.get('invalid', 0)}) -> {dest}"
    )


def _write(dest: Any, result: dict[str, list[dict[str, Any]]], summary: dict[str, Any]) -> None:
    import orjson

    summary = {**summary, "train": len(result["train"]), "heldout": len(result["heldout"])}
    files = {f"{k}.jsonl": b"".join(orjson.dumps(r) + b"\n" for r in rows) for k, rows in result.items()}
    files["stats.json"] = orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    for fname, data in files.items():
        tmp = dest / f".{fname}.tmp"
        tmp.write_bytes(data)
        tmp.replace(dest / fname)
