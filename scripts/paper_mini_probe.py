"""The forward-only probe of one checkpoint (issue 41; swerl_cli.training.probe): the mean log p of the gold edit turn
on the held-out tasks, and the drift from a reference checkpoint on the command frame of fixed trajectories.

    python scripts/paper_mini_probe.py --model CKPT --ref RFT_CKPT --gold GOLD.jsonl --frame FRAME.jsonl \
        -o OUT.json [--tokenizer MODEL_DIR] [--label NAME]

Each gold trajectory is cut after its last edit turn and `--ref-cache FILE` keeps the reference's logprobs (written
by the first probe, reused by the next ones), which keeps a probe near a minute. OUT.json is written whole (a
temporary file renamed into place): the probe's numbers (gold_edit_logprob,
gold_action_logprob, their deltas against the reference, frame_drift, frame_delta, token counts), the two
checkpoints, the label and the wall time. `make paper-mini-gain` runs it on the RFT checkpoint and after every DAPO
update (about a minute on SmolLM2-135M here). A bad record is one stderr line naming file and line (exit 3).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from swerl_cli.core.errors import SwerlError


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="the checkpoint probed")
    p.add_argument("--ref", required=True, help="the reference checkpoint (drift and deltas are against it)")
    p.add_argument("--gold", required=True, help="held-out gold-fix trajectories")
    p.add_argument("--frame", required=True, help="fixed trajectories whose command frame must not drift")
    p.add_argument("-o", "--output", required=True, help="the probe's JSON record")
    p.add_argument("--tokenizer", help="model dir rendering records without token ids (default --model)")
    p.add_argument("--label", default="", help="a name for the checkpoint in the record (e.g. DAPO-2)")
    p.add_argument(
        "--ref-cache",
        help="JSON file of the reference's logprobs on these trajectories: read when it matches, else written",
    )
    args = p.parse_args(argv)
    from swerl_cli.core.model_dir import load_tokenizer
    from swerl_cli.training.probe import ProbeData

    t0 = time.perf_counter()
    data = ProbeData.load(args.gold, args.frame, load_tokenizer(args.tokenizer or args.model))
    same = Path(args.ref).resolve() == Path(args.model).resolve()
    before = data.load_logprobs(args.ref_cache) if args.ref_cache else None
    after = data.logprobs(args.model)
    if before is None:
        before = after if same else data.logprobs(args.ref)
        if args.ref_cache:
            data.save_logprobs(args.ref_cache, args.ref, before)
    row = {"label": args.label, "checkpoint": args.model, "reference": args.ref, **data.measure(after, before)}
    row["seconds"] = round(time.perf_counter() - t0, 1)
    out = Path(args.output)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(json.dumps(row) + "\n")
    tmp.replace(out)
    edit, drift = row["gold_edit_logprob"], row["frame_drift"]
    print(
        f"probe {args.label or args.model}: gold edit log p {edit if edit is None else round(edit, 4)} "
        f"(delta {row['gold_edit_delta']}), frame drift {drift}, {row['seconds']} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except SwerlError as e:
        print(f"paper_mini_probe: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
