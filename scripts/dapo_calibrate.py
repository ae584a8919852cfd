"""Offline calibration of the DAPO optimizer's start (issue 41): one DAPO update per candidate, from the same RFT
checkpoint on the same graded batch (no rollouts), measured by a forward-only probe.

    python scripts/dapo_calibrate.py --model RFT_CKPT --graded GRADED.jsonl --gold GOLD.jsonl --frame FRAME.jsonl \
        --out DIR [--tokenizer MODEL_DIR] [--lr 2e-5] [--candidates eps=1e-8,...,carried,carried-v] \
        [-- EXTRA DAPO FLAGS]

Candidates: `eps=X` starts a fresh AdamW with eps X (`swerl dapo --no-carry-optimizer --adam-eps X`); `carried`
starts from the AdamW moments `swerl rft --save-optimizer` left in RFT_CKPT/optimizer_state
(`--no-carry-optimizer --init-optimizer RFT_CKPT`, eps 1e-8); `carried-v` keeps only their second moment (the
first zeroed: `--init-optimizer-keep second`), so the step has the RFT run's scale without its momentum. Each
update runs through the real `swerl dapo` into DIR/<candidate>. The probe then compares each updated checkpoint
with RFT_CKPT:

    gold_delta    mean change of log p over the action tokens of GOLD (held-out gold-fix trajectories): the wanted move
    frame_drift   mean |change of log p| over the command-frame tokens (``` fences and the command's first word) of the
                  action turns of FRAME (fixed trajectories): the format the update must not disturb
    frame_delta   the signed mean change on those tokens (negative: the frame gets less likely)

One JSON record per candidate on stdout (and in DIR/calibration.jsonl), a table on stderr. A bad input is one stderr
line (exit 2 for the command line, 3 for records); a failed update exits 1 with dapo's last stderr line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from swerl_cli.core.errors import SwerlError

FRAME = re.compile(r"```[^\n]*\n?")  # a fence line, opening (```command) or closing
COMMAND_WORD = re.compile(r"```[^\n]*\n[ \t]*(\S+)")  # the first word after an opening fence
DEFAULT_CANDIDATES = "eps=1e-8,eps=1e-6,eps=1e-4,eps=1e-2,carried,carried-v"


def frame_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the command frame in one action turn's text: fence lines and each command's first word."""
    spans = [m.span() for m in FRAME.finditer(text)]
    spans += [m.span(1) for m in COMMAND_WORD.finditer(text)]
    return spans


def frame_mask(tok: Any, ids: list[int], mask: list[int]) -> list[bool]:
    """Per token of a sample: an action token that overlaps the command frame of its turn (a run of mask 1)."""
    out = [False] * len(ids)
    i = 0
    while i < len(ids):
        if not mask[i]:
            i += 1
            continue
        j = i
        while j < len(ids) and mask[j]:
            j += 1
        pieces = [tok.decode([t]) for t in ids[i:j]]
        starts, pos = [], 0
        for p in pieces:
            starts.append(pos)
            pos += len(p)
        spans = frame_spans("".join(pieces))
        for k, (p, s) in enumerate(zip(pieces, starts, strict=True)):
            out[i + k] = any(s < b and a < s + len(p) for a, b in spans)
        i = j
    return out


def load_samples(path: str, tok: Any) -> list[Any]:
    """Every record of `path` as a training sample (all action tokens, format errors included); a record without
    token ids (gold-steps demonstrations) is rendered with `tok`'s chat template, as `swerl rft --rerender` does."""
    from swerl_cli.streams.jsonl import read_records
    from swerl_cli.training.data import trajectory_to_sample

    return [trajectory_to_sample(loc, tok, mask_format_errors=False, rerender=True) for loc in read_records(path)]


def token_logprobs(model_dir: str, samples: list[Any]) -> list[list[float]]:
    """log p of every token of each sample under `model_dir` (fp32, CPU or the first GPU), one sample per forward."""
    import torch
    from transformers import AutoModelForCausalLM

    from swerl_cli.training.batching import collate
    from swerl_cli.training.logprobs import packed_logprobs

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(device).eval()
    with torch.no_grad():
        return [packed_logprobs(model, collate([s]), device)[0].cpu().tolist() for s in samples]


def probe(before: dict[str, list[list[float]]], after: dict[str, list[list[float]]], data: dict) -> dict[str, Any]:
    """gold_delta, frame_drift, frame_delta and their token counts from per-token logprobs before and after."""
    gold = [
        a - b
        for s, lb, la in zip(data["gold"], before["gold"], after["gold"], strict=True)
        for m, b, a in zip(s.loss_mask, lb, la, strict=True)
        if m
    ]
    frame = [
        a - b
        for fm, lb, la in zip(data["frame_mask"], before["frame"], after["frame"], strict=True)
        for f, b, a in zip(fm, lb, la, strict=True)
        if f
    ]
    return {
        "gold_delta": sum(gold) / len(gold) if gold else None,
        "gold_tokens": len(gold),
        "frame_drift": sum(abs(d) for d in frame) / len(frame) if frame else None,
        "frame_delta": sum(frame) / len(frame) if frame else None,
        "frame_tokens": len(frame),
    }


def dapo_flags(candidate: str, model: str) -> list[str]:
    """The `swerl dapo` flags of one candidate (see the module docstring)."""
    if candidate in ("carried", "carried-v"):
        if not (Path(model) / "optimizer_state" / "latest").is_file():
            why = f"{model}/optimizer_state missing; train RFT with --save-optimizer"
            raise SwerlError(f"--candidates {candidate}: {why}")
        keep = "second" if candidate == "carried-v" else "both"
        return ["--no-carry-optimizer", "--init-optimizer", model, "--init-optimizer-keep", keep]
    if not candidate.startswith("eps="):
        raise SwerlError(f"--candidates: unknown candidate {candidate!r}; use eps=X, carried or carried-v")
    try:
        eps = float(candidate.removeprefix("eps="))
    except ValueError:
        raise SwerlError(f"--candidates: {candidate!r}: eps is not a number") from None
    return ["--no-carry-optimizer", "--adam-eps", repr(eps)]


def run_update(args: argparse.Namespace, candidate: str, out: Path) -> dict[str, Any]:
    """One `swerl dapo` update of `candidate` into `out`; its summary record."""
    swerl = Path(sys.executable).with_name("swerl")
    cmd = [str(swerl), "dapo", args.graded, "--model", args.model, "--output", str(out), "--lr", repr(args.lr),
           "--overwrite", *dapo_flags(candidate, args.model), *args.extra]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, env={**os.environ}, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.decode().strip().splitlines() or ["(no stderr)"])[-1]
        raise SwerlError(f"candidate {candidate}: swerl dapo exited {proc.returncode}: {last}")
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    args = parse(argv)
    from swerl_cli.core.model_dir import load_tokenizer

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    tok = load_tokenizer(args.tokenizer or args.model)
    data: dict[str, Any] = {"gold": load_samples(args.gold, tok), "frame": load_samples(args.frame, tok)}
    data["frame_mask"] = [frame_mask(tok, s.input_ids, s.loss_mask) for s in data["frame"]]
    before = {k: token_logprobs(args.model, data[k]) for k in ("gold", "frame")}
    rows = []
    with open(out_dir / "calibration.jsonl", "w") as log:
        for cand in args.candidates.split(","):
            t0 = time.perf_counter()
            summary = run_update(args, cand, out_dir / cand)
            ckpt = summary["checkpoint"]
            after = {k: token_logprobs(ckpt, data[k]) for k in ("gold", "frame")}
            row = {"candidate": cand, "lr": args.lr, "steps": summary["steps"], **probe(before, after, data)}
            row["optimizer_start"] = summary["config"]["dapo"]["optimizer_start"]
            row["seconds"] = round(time.perf_counter() - t0, 1)
            rows.append(row)
            line = json.dumps(row)
            print(line, flush=True)
            log.write(line + "\n")
    table(rows)
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
    args = p.parse_args(argv)
    args.extra = extra
    return args


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except SwerlError as e:
        print(f"dapo_calibrate: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
