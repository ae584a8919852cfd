"""`make rl-status`: one line per iteration of a `make rl` run from the files it wrote, then the eval change.

    python scripts/rl_status.py RUNS

Per iteration k: the DAPO summary of its rollouts (iter-k/dapo.json: mean reward, resolved share, steps, kept
samples) and the held-out eval of checkpoint k (iter-k/eval.json, written by `swerl eval --json`: pass@1 +- SEM).
The last line compares the first and the last evaluated checkpoints; the difference is given in standard errors
of the difference (sqrt(sem_a^2 + sem_b^2)), so a reader sees whether it is more than sampling noise.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() and path.stat().st_size else None


def main(runs: str) -> None:
    iters = sorted(
        (int(m.group(1)), d)
        for d in Path(runs).glob("iter-*")
        if d.is_dir() and (m := re.fullmatch(r"iter-(\d+)", d.name))
    )
    evals: list[tuple[int, dict]] = []
    for k, d in iters:
        parts: list[str] = []
        dapo = _load(d / "dapo.json")
        if dapo:
            kept = dapo["counts"]["samples_kept"]
            parts.append(
                f"rollouts mean_reward={dapo['reward_mean']:.3f} resolved={dapo['resolved_rate']:.3f} "
                f"steps={dapo['steps']} kept={kept}"
            )
        ev = _load(d / "eval.json")
        if ev:
            p = ev["pass@1"]
            parts.append(f"eval of checkpoint {k}: pass@1 {p['mean']:.3f} ± {p['sem']:.3f} (n={p['n']})")
            evals.append((k, p))
        if parts:
            print(f"iter-{k}: " + " | ".join(parts))
    if len(evals) >= 2:
        (k0, a), (k1, b) = evals[0], evals[-1]
        se = math.sqrt(a["sem"] ** 2 + b["sem"] ** 2)
        diff = b["mean"] - a["mean"]
        z = f", {diff / se:+.1f} standard errors" if se > 0 else ""
        print(
            f"RL: eval pass@1 {a['mean']:.2f} ± {a['sem']:.2f} (checkpoint {k0}) -> {b['mean']:.2f} ± {b['sem']:.2f} "
            f"(checkpoint {k1}) over {k1 - k0} iterations: {diff:+.2f}{z}"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs")
