"""Offline calibration of the DAPO optimizer's start (issue 41): one DAPO update per candidate, from the same RFT
checkpoint on the same graded batch (no rollouts), measured by a forward-only probe.

    python scripts/dapo_calibrate.py --model RFT_CKPT --graded GRADED.jsonl --gold GOLD.jsonl --frame FRAME.jsonl \
        --out DIR [--tokenizer MODEL_DIR] [--lr 2e-5] [--candidates eps=1e-8,...,carried,carried-v] \
        [-- EXTRA DAPO FLAGS]

Candidates: `eps=X` starts a fresh AdamW with eps X (`swerl dapo --no-carry-optimizer --adam-eps X`); `carried`
starts from the AdamW moments `swerl rft --save-optimizer` left in RFT_CKPT/optimizer_state
(`--no-carry-optimizer --init-optimizer RFT_CKPT`, eps 1e-8); `carried-v` keeps only their second moment (the
first zeroed: `--init-optimizer-keep second`), so the step has the RFT run's scale without its momentum. Each
update runs through the real `swerl dapo` into DIR/<candidate>. The probe (swerl_cli.training.probe) then compares
each updated checkpoint with RFT_CKPT:

    gold_delta    mean change of log p over the action tokens of GOLD (held-out gold-fix trajectories): the wanted move
    frame_drift   mean |change of log p| over the command-frame tokens (``` fences and the command's first word) of the
                  action turns of FRAME (fixed trajectories): the format the update must not disturb
    frame_delta   the signed mean change on those tokens (negative: the frame gets less likely)

One JSON record per candidate on stdout (and in DIR/calibration.jsonl), a table on stderr. `--choice FILE` also
applies the rule (the largest gold_delta among candidates with gold_delta > 0 and frame_drift <= --max-drift; none:
the default fresh start) and writes the chosen candidate with its `swerl dapo` flags to FILE. A bad input is one stderr
line (exit 2 for the command line, 3 for records); a failed update exits 1 with dapo's last stderr line.
`--rechoose OLD.json NEW.json [MAX_DRIFT]` applies today's rule to a recorded choice's candidates (no update runs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from swerl_cli.core.errors import InputError, SwerlError, UsageError

DEFAULT_CANDIDATES = "eps=1e-8,eps=1e-6,eps=1e-4,eps=1e-2,carried,carried-v"


def dapo_flags(candidate: str, init: str, carry: bool = False) -> list[str]:
    """The `swerl dapo` flags of one candidate (see the module docstring). `init` holds the RFT run's moments; with
    `carry` the optimizer state is kept on (saved with the checkpoint, so the candidate's checkpoint can continue
    as a run: its --model must hold no state of its own, see --init-from)."""
    head = [] if carry else ["--no-carry-optimizer"]
    if candidate in ("carried", "carried-v"):
        if not (Path(init) / "optimizer_state" / "latest").is_file():
            why = f"{init}/optimizer_state missing; train RFT with --save-optimizer"
            raise SwerlError(f"--candidates {candidate}: {why}")
        keep = "second" if candidate == "carried-v" else "both"
        return [*head, "--init-optimizer", init, "--init-optimizer-keep", keep]
    if not candidate.startswith("eps="):
        raise SwerlError(f"--candidates: unknown candidate {candidate!r}; use eps=X, carried or carried-v")
    try:
        eps = float(candidate.removeprefix("eps="))
    except ValueError:
        raise SwerlError(f"--candidates: {candidate!r}: eps is not a number") from None
    return [*head, "--adam-eps", repr(eps)]


def candidate_flags(args: argparse.Namespace, candidate: str) -> list[str]:
    return dapo_flags(candidate, args.init_from or args.model, carry=bool(args.init_from))


def run_update(args: argparse.Namespace, candidate: str, out: Path) -> dict[str, Any]:
    """One `swerl dapo` update of `candidate` into `out` (its metrics in OUT.metrics.jsonl, its summary in
    OUT.summary.json); the summary record."""
    swerl = Path(sys.executable).with_name("swerl")
    cmd = [str(swerl), "dapo", args.graded, "--model", args.model, "--output", str(out), "--lr", repr(args.lr),
           "--overwrite", "--metrics", f"{out}.metrics.jsonl",
           *candidate_flags(args, candidate), *args.extra]  # fmt: skip
    Path(f"{out}.metrics.jsonl").unlink(missing_ok=True)
    proc = subprocess.run(cmd, capture_output=True, env={**os.environ}, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.decode().strip().splitlines() or ["(no stderr)"])[-1]
        raise SwerlError(f"candidate {candidate}: swerl dapo exited {proc.returncode}: {last}")
    line = proc.stdout.decode().strip().splitlines()[-1]
    Path(f"{out}.summary.json").write_text(line + "\n")
    return json.loads(line)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--rechoose"]:
        return rechoose(argv[1:])
    args = parse(argv)
    from swerl_cli.core.model_dir import load_tokenizer
    from swerl_cli.training.probe import ProbeData

    if args.init_from and (Path(args.model) / "optimizer_state").exists():
        raise SwerlError(f"--init-from: {args.model} holds optimizer_state/, which the kept state would load")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = ProbeData.load(args.gold, args.frame, load_tokenizer(args.tokenizer or args.model))
    before = data.load_logprobs(args.ref_cache) if args.ref_cache else None
    if before is None:
        before = data.logprobs(args.model)
        if args.ref_cache:
            data.save_logprobs(args.ref_cache, args.model, before)
    rows = []
    with open(out_dir / "calibration.jsonl", "w") as log:
        for cand in args.candidates.split(","):
            t0 = time.perf_counter()
            summary = run_update(args, cand, out_dir / cand)
            after = data.logprobs(summary["checkpoint"])
            row = {"candidate": cand, "lr": args.lr, "steps": summary["steps"], **data.measure(after, before)}
            row["optimizer_start"] = summary["config"]["dapo"]["optimizer_start"]
            row["flags"] = candidate_flags(args, cand)
            row["seconds"] = round(time.perf_counter() - t0, 1)
            rows.append(row)
            line = json.dumps(row)
            print(line, flush=True)
            log.write(line + "\n")
    table(rows)
    if args.choice:
        inputs = {"model": args.model, "graded": args.graded, "lr": args.lr, "out": args.out, "extra": args.extra}
        write_choice(Path(args.choice), rows, inputs, args.max_drift)
    return 0


def choose(rows: list[dict[str, Any]], max_drift: float = 1e-3) -> tuple[dict[str, Any] | None, str]:
    """The rule: the largest gold_delta among candidates that raise the gold (gold_delta > 0) and keep the frame
    drift within `max_drift`; None when none does. (The first rule, the largest gold_delta / frame_drift, is scale
    free: when every candidate's drift is at its noise floor, as on SmolLM2 -- 2e-5 and 1e-6 -- it picks the
    smallest step. paper-mini-gain's first run chose so; docs/training.md.)"""
    up = [r for r in rows if r["gold_delta"] is not None and r["gold_delta"] > 0]
    ok = [r for r in up if r["frame_drift"] is not None and r["frame_drift"] <= max_drift]
    if not ok:
        why = "no candidate raised the held-out gold logprob" if not up else f"every gain drifted over {max_drift:g}"
        return None, why
    best = max(ok, key=lambda r: r["gold_delta"])
    return best, f"largest gold_delta among candidates with gold_delta > 0 and frame_drift <= {max_drift:g}"


def write_choice(path: Path, rows: list[dict[str, Any]], inputs: dict[str, Any], max_drift: float = 1e-3) -> None:
    """The decision as a record: the chosen candidate and its `swerl dapo` flags (eps=1e-8, today's default, when
    no candidate qualifies), the rule, and every candidate's numbers."""
    best, why = choose(rows, max_drift)
    fallback = next((r for r in rows if r["candidate"] == "eps=1e-8"), None)
    chosen = best or fallback
    rec = {
        "candidate": chosen["candidate"] if chosen else "eps=1e-8",
        "flags": chosen["flags"] if chosen else ["--no-carry-optimizer", "--adam-eps", "1e-08"],
        "rule": why if best else f"{why}: the default start (fresh AdamW, eps 1e-8)",
        "candidates": rows,
        "inputs": inputs,
    }
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(rec, indent=1) + "\n")
    tmp.replace(path)
    print(f"dapo_calibrate: chose {rec['candidate']} ({rec['rule']}) -> {path}", file=sys.stderr)


def rechoose(argv: list[str]) -> int:
    """`--rechoose OLD.json NEW.json [MAX_DRIFT]`: the current rule applied to a recorded calibration's candidates,
    without running them again (the record keeps OLD's inputs and names OLD)."""
    if len(argv) not in (2, 3):
        raise UsageError("usage: dapo_calibrate.py --rechoose OLD_CHOICE.json NEW_CHOICE.json [MAX_DRIFT]")
    try:
        old = json.loads(Path(argv[0]).read_text())
        rows, inputs = old["candidates"], {**old["inputs"], "rechosen_from": argv[0]}
        max_drift = float(argv[2]) if len(argv) == 3 else 1e-3
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(argv[0], None, None, f"not a calibration choice ({e})") from None
    write_choice(Path(argv[1]), rows, inputs, max_drift)
    return 0


def table(rows: list[dict[str, Any]]) -> None:
    """The candidates side by side on stderr: the gold move per unit of frame drift is the figure of merit."""
    print(
        f"{'candidate':<12}{'gold_delta':>12}{'frame_drift':>13}{'frame_delta':>13}{'gold/drift':>12}", file=sys.stderr
    )
    for r in rows:
        g, d, f = r["gold_delta"], r["frame_drift"], r["frame_delta"]
        ratio = f"{g / d:+.3f}" if g is not None and d else "-"
        print(f"{r['candidate']:<12}{g:>+12.5f}{d:>13.5f}{f:>+13.5f}{ratio:>12}", file=sys.stderr)


def parse(argv: list[str]) -> argparse.Namespace:
    extra: list[str] = []
    if "--" in argv:
        argv, extra = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="the RFT checkpoint every candidate starts from")
    p.add_argument("--graded", required=True, help="the fixed graded batch (one DAPO update's input)")
    p.add_argument("--gold", required=True, help="held-out gold-fix trajectories (their action tokens)")
    p.add_argument("--frame", required=True, help="fixed trajectories whose command frame must not drift")
    p.add_argument("--out", required=True, help="directory for the candidates' checkpoints and calibration.jsonl")
    p.add_argument(
        "--tokenizer",
        help="model dir whose chat template renders GOLD/FRAME records without token ids (paper-mini: RUN/rft/"
        "base-marked, the template with generation markers); default --model",
    )
    p.add_argument("--lr", type=float, default=2e-5, help="learning rate of every candidate (default 2e-5)")
    p.add_argument("--candidates", default=DEFAULT_CANDIDATES, help=f"comma-separated (default {DEFAULT_CANDIDATES})")
    p.add_argument(
        "--init-from",
        help="take the carried moments from DIR and keep the optimizer state on, so each candidate's checkpoint "
        "can continue as a run (--model must then hold no optimizer_state/; default: --model, state off)",
    )
    p.add_argument("--ref-cache", help="--model's logprobs on GOLD/FRAME: read when saved for them, else written")
    p.add_argument("--max-drift", type=float, default=1e-3, help="--choice: largest frame drift allowed (default 1e-3)")
    p.add_argument("--choice", help="also write the pre-registered choice (chosen candidate, its dapo flags) to FILE")
    args = p.parse_args(argv)
    args.extra = extra
    return args


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except SwerlError as e:
        print(f"dapo_calibrate: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
