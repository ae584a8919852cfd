"""`make paper-mini-async`'s verdict: the asynchronous loop's last checkpoint against the synchronous run's.

    python scripts/paper_mini_async.py RUN

RUN is a `make paper-mini` run directory; RUN/async is `make paper-mini-async`'s (the same RFT checkpoint, train
pool and settings, `make rl ASYNC=1`). Compares, on the held-out split with the same eval seeds, the last DAPO
checkpoint of each loop: pass@1 +- SEM, the difference in standard errors of the difference (sqrt(sem_a^2 +
sem_b^2)), and the check of issue 25's learning test: async not below sync by more than 2 of them (the toy-task
test's one-sided rule). Beside it: wall time of the RL stages of each loop (sync: rollouts + updates, without the
intermediate evals; async: the whole `make rl ASYNC=1`), and per async update the staleness of its groups and the
groups dropped as too stale. Writes RUN/async/compare.md and RUN/async/compare.json and prints the markdown.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paper_mini_table import _f, _load, _mutators, _row, _z


def _last(run: Path) -> tuple[int, dict] | None:
    iters = sorted(int(d.name.split("-")[1]) for d in run.glob("iter-*") if d.name.split("-")[1].isdigit())
    for k in reversed(iters):
        if k > 0 and (row := _row(f"DAPO-{k}", run / f"iter-{k}", _mutators(run))):
            return k, row
    return None


def _kept(counts: dict) -> int | None:
    return None if counts.get("groups") is None else counts["groups"] - (counts.get("groups_dropped") or 0)


def _stage_s(run: Path, names: list[str]) -> int | None:
    times = [_load(run / "times" / f"{n}.json") for n in names]
    return None if not times or any(t is None for t in times) else sum(t["wall_s"] for t in times if t)


class Missing(Exception):
    pass


def compare(run: Path) -> dict:
    sync, arun = _last(run), _last(run / "async")
    if sync is None or arun is None:
        missing = run if sync is None else run / "async"
        raise Missing(f"{missing}: no evaluated DAPO checkpoint (iter-k/eval.json, k > 0)")
    (ks, srow), (ka, arow) = sync, arun
    z = _z(srow, arow)
    updates = []
    for k in range(ka):
        d = _load(run / "async" / f"iter-{k}" / "dapo.json") or {}
        st, fo, counts = d.get("staleness") or {}, d.get("follow") or {}, d.get("counts") or {}
        updates.append(
            {
                "update": k + 1,
                "groups": len(st.get("groups") or []),
                "staleness_mean": st.get("mean"),
                "staleness_max": st.get("max"),
                "staleness_hist": st.get("hist"),
                "dropped_stale_groups_total": fo.get("dropped_stale_groups"),
                "groups_kept": _kept(counts),
                "steps": d.get("steps"),
            }
        )
    sync_names = [f"{s}-{k}" for k in range(ks) for s in ("rollouts", "dapo")]
    return {
        "run": str(run),
        "sync": {**srow, "updates": ks, "rl_wall_s": _stage_s(run, sync_names)},
        "async": {
            **arow,
            "updates": ka,
            "rl_wall_s": _stage_s(run / "async", ["async-rl"]),
            "settings": _settings(run / "async"),
        },
        "z_async_vs_sync": z,
        "within_2se": z is not None and z >= -2,
        "per_update": updates,
    }


def _settings(arun: Path) -> dict:
    """K and the loss of the async run, from its first update's summary."""
    d = _load(arun / "iter-0" / "dapo.json") or {}
    return {"staleness": (d.get("staleness") or {}).get("k"), "loss": (d.get("config") or {}).get("loss")}


def markdown(c: dict) -> str:
    s, a = c["sync"], c["async"]
    z = c["z_async_vs_sync"]
    out = [
        f"paper-mini {c['run']}: the asynchronous loop (RUN/async) vs the synchronous one, from one RFT checkpoint",
        "",
        "| loop | updates | last checkpoint pass@1 ± SEM (n) | pass@k | Δ vs sync | RL wall s (rollouts + updates) |",
        "|---|---|---|---|---|---|",
    ]
    cfg = a["settings"]
    for name, r, d in (("sync (K = 0)", s, "-"), (f"async (K = {cfg['staleness']}, loss {cfg['loss']})", a, None)):
        delta = d if d is not None else ("-" if z is None else f"{z:+.1f} SE")
        wall = "-" if r["rl_wall_s"] is None else str(r["rl_wall_s"])
        out.append(
            f"| {name} | {r['updates']} | {_f(r['pass1'])} ± {_f(r['sem'])} ({r['n']}) | pass@{r['k']} "
            f"{_f(r['pass_k'])} | {delta} | {wall} |"
        )
    out += [
        "",
        f"Learning test (async not below sync by more than 2 SE): {'passed' if c['within_2se'] else 'FAILED'}"
        f" ({'-' if z is None else format(z, '+.1f')} SE).",
        "",
        "| async update | groups trained | staleness mean | staleness max | dropped as stale (total so far) | steps |",
        "|---|---|---|---|---|---|",
    ]
    for u in c["per_update"]:
        out.append(
            f"| {u['update']} | {u['groups']} | {_f(u['staleness_mean'], '.2f')} | {u['staleness_max']} | "
            f"{u['dropped_stale_groups_total']} | {u['steps']} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: paper_mini_async.py RUN_DIR", file=sys.stderr)
        return 2
    run = Path(argv[0])
    try:
        c = compare(run)
    except Missing as e:
        print(f"paper_mini_async: {e}", file=sys.stderr)
        return 3
    md = markdown(c)
    out = run / "async" / "compare"  # RUN/async/compare.md and RUN/async/compare.json
    out.with_suffix(".json").write_text(json.dumps(c, indent=1) + "\n")
    out.with_suffix(".md").write_text(md)
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
