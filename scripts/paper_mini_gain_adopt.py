"""Adopt the calibration's chosen update as iteration 0's (make paper-mini-gain; scripts/dapo_calibrate.py --choice).

    python scripts/paper_mini_gain_adopt.py CHOICE.json DAPO_DIR

The calibration ran one `swerl dapo` update per optimizer start on DAPO_DIR/iter-0/graded.jsonl with the flags
rl-update gives iteration 0 (its candidates keep the optimizer state on, so a checkpoint can continue as a run).
When the choice was made on this directory's batch and iteration 0 has no update yet, the chosen candidate's
checkpoint becomes DAPO_DIR/iter-1/ckpt, its summary DAPO_DIR/iter-0/dapo.json and its metrics
DAPO_DIR/iter-0/metrics.jsonl (the summary last: it is the stage's mark of completion), so the same update is not
run twice. Otherwise (another seed's batch, or already done) nothing changes. One stderr line says which.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path


def main(choice_path: str, dapo_dir: str) -> int:
    choice = json.loads(Path(choice_path).read_text())
    d = Path(dapo_dir)
    graded = d / "iter-0" / "graded.jsonl"
    if (d / "iter-0" / "dapo.json").exists():
        print(f"adopt: {d}/iter-0/dapo.json exists, nothing to adopt", file=sys.stderr)
        return 0
    if Path(choice["inputs"]["graded"]).resolve() != graded.resolve():
        print(f"adopt: the calibration ran on {choice['inputs']['graded']}, not {graded}: iteration 0 updates anew",
              file=sys.stderr)  # fmt: skip
        return 0
    src = Path(choice["inputs"]["out"]) / choice["candidate"]
    ckpt = d / "iter-1" / "ckpt"
    if not (ckpt / "config.json").exists():
        tmp = d / "iter-1" / ".ckpt.adopt"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp, symlinks=True)
        shutil.rmtree(ckpt, ignore_errors=True)
        tmp.rename(ckpt)
    shutil.copyfile(f"{src}.metrics.jsonl", d / "iter-0" / "metrics.jsonl")
    summary = json.loads(Path(f"{src}.summary.json").read_text())
    summary["adopted_from"] = str(src)
    tmp_json = d / "iter-0" / ".dapo.json.adopt"
    tmp_json.write_text(json.dumps(summary) + "\n")
    tmp_json.replace(d / "iter-0" / "dapo.json")
    print(f"adopt: iteration 0's update is the calibration's {choice['candidate']} ({src})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
