"""`make paper-mini-table`: the paper-style table of a `make paper-mini` run, read from its run directory.

    python scripts/paper_mini_table.py RUN [--out-md FILE] [--out-json FILE]

Rows: the base model (RUN/base/iter-0), the RFT checkpoint (RUN/iter-0, the RL loop's starting checkpoint) and each
DAPO checkpoint k (RUN/iter-k). Per row, on the held-out split (iter-k/eval.json from `swerl eval --json` and the
graded records beside it): pass@1 +- SEM (over samples), pass@k (k = samples per task), the format-error rate (assistant
turns without exactly one command block / all assistant turns), turns per episode, the share of episodes ending in
`submit`, tokens per episode (context at the last turn) and generated tokens per episode; then the held-out episodes
resolved per synth mutator (from the tasks' `synth.mutator`, RUN/heldout.jsonl), and per DAPO update its rollouts
resolved (RUN/train.jsonl's mutators too). Each row's change from the
row before is given in standard errors of the difference, sqrt(sem_a^2 + sem_b^2), and the issue's target is checked:
RFT above base and the last DAPO checkpoint above RFT, each by at least 2 of them. Wall time per stage comes from
RUN/times/*.json. The bootstrap label (RUN/paper-mini.json) heads the table. Writes RUN/table.md and RUN/table.json
and prints the markdown.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() and path.stat().st_size else None


def _mutators(run: Path) -> dict[str, str]:
    """instance_id -> the synth mutator that made the task, from the run's task files (RUN/heldout.jsonl, the held-out
    split, and RUN/train.jsonl, DAPO's pool); tasks without a `synth.mutator` field are left out."""
    rows = _records(run / "heldout.jsonl") + _records(run / "train.jsonl")
    return {
        row["instance_id"]: mutator
        for row in rows
        if row.get("instance_id") and (mutator := (row.get("synth") or {}).get("mutator"))
    }


def _by_mutator(records: list[dict], mutators: dict[str, str]) -> dict[str, list[int]]:
    """mutator -> [resolved, episodes] over graded records whose task has a known mutator."""
    out: dict[str, list[int]] = {}
    for rec in records:
        mutator = mutators.get(rec.get("instance_id", ""))
        if mutator:
            cell = out.setdefault(mutator, [0, 0])
            cell[0] += bool((rec.get("grade") or {}).get("resolved"))
            cell[1] += 1
    return dict(sorted(out.items()))


def _records(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _episodes(path: Path, mutators: dict[str, str]) -> dict:
    """Format-error rate, turns, submit share, tokens and resolved-by-mutator over the graded records of one eval."""
    turns = fmt = submitted = n = 0
    tokens: list[int] = []
    generated: list[int] = []
    records = _records(path)
    for rec in records:
        stats = rec.get("stats") or {}
        n += 1
        turns += int(stats.get("turns") or 0)
        fmt += int(stats.get("format_errors") or 0)
        submitted += rec.get("exit_status") == "submitted"
        if stats.get("tokens_total") is not None:
            tokens.append(int(stats["tokens_total"]))
        if stats.get("tokens_generated") is not None:
            generated.append(int(stats["tokens_generated"]))
    return {
        "episodes": n,
        "format_error_rate": fmt / turns if turns else None,
        "turns_per_episode": turns / n if n else None,
        "submit_share": submitted / n if n else None,
        "tokens_per_episode": sum(tokens) / len(tokens) if tokens else None,
        "generated_per_episode": sum(generated) / len(generated) if generated else None,
        "by_mutator": _by_mutator(records, mutators),
    }


def _row(name: str, d: Path, mutators: dict[str, str]) -> dict | None:
    ev = _load(d / "eval.json")
    if not ev:
        return None
    p1 = ev["pass@1"]
    ks = sorted(int(k) for k in ev.get("pass@k", {}))
    k = ks[-1] if ks else 1
    return {
        "model": name,
        "dir": str(d),
        "pass1": p1["mean"],
        "sem": p1["sem"],
        "n": p1["n"],
        "k": k,
        "pass_k": ev.get("pass@k", {}).get(str(k)),
        "tasks": ev.get("tasks"),
        "errors": ev.get("errors", 0),
        **_episodes(d / "eval-graded.jsonl", mutators),
    }


def _updates(run: Path, iters: list[int], mutators: dict[str, str]) -> list[dict]:
    """Per DAPO iteration k: the rollouts' resolved share (train split, also by mutator) and what the update kept
    and did."""
    out = []
    for k in iters:
        d = run / f"iter-{k}"
        summary = _load(d / "dapo.json")
        if summary is None:
            continue
        records = _records(d / "graded.jsonl")
        resolved = sum(bool((rec.get("grade") or {}).get("resolved")) for rec in records)
        counts = summary.get("counts") or {}
        out.append(
            {
                "iteration": k,
                "rollouts": len(records),
                "rollouts_resolved": resolved,
                "rollouts_by_mutator": _by_mutator(records, mutators),
                "groups": counts.get("groups"),
                "groups_dropped": counts.get("groups_dropped"),
                "samples_kept": counts.get("samples_kept"),
                "steps": summary.get("steps"),
                "tokens": summary.get("tokens"),
            }
        )
    return out


def _z(a: dict, b: dict) -> float | None:
    se = math.sqrt((a["sem"] or 0.0) ** 2 + (b["sem"] or 0.0) ** 2)
    diff = b["pass1"] - a["pass1"]
    if se == 0:
        return None if diff == 0 else math.copysign(math.inf, diff)
    return diff / se


def collect(run: Path) -> dict:
    rows = []
    mutators = _mutators(run)
    base = _row("base", run / "base" / "iter-0", mutators)
    if base:
        rows.append(base)
    iters = sorted(
        int(m.group(1)) for d in run.glob("iter-*") if (m := re.fullmatch(r"iter-(\d+)", d.name)) and d.is_dir()
    )
    for k in iters:
        r = _row("RFT" if k == 0 else f"DAPO-{k}", run / f"iter-{k}", mutators)
        if r:
            rows.append(r)
    for prev, cur in zip(rows, rows[1:], strict=False):
        cur["z_vs_prev"] = _z(prev, cur)
    by = {r["model"]: r for r in rows}
    dapo = [r for r in rows if r["model"].startswith("DAPO-")]
    target = {
        "rft_over_base_z": _z(by["base"], by["RFT"]) if "base" in by and "RFT" in by else None,
        "dapo_over_rft_z": _z(by["RFT"], dapo[-1]) if "RFT" in by and dapo else None,
    }
    zs = [target["rft_over_base_z"], target["dapo_over_rft_z"]]
    target["reached"] = all(z is not None and z >= 2 for z in zs)
    times = [_load(p) for p in sorted(run.glob("times/*.json"))]
    stages = sorted((t for t in times if t), key=lambda t: t["start"])
    rft = _load(run / "rft" / "rft.json")
    demos = run / "rft" / "demos.jsonl"
    return {
        "run": str(run),
        "settings": _load(run / "paper-mini.json") or {},
        "rft_demos": sum(1 for ln in demos.read_text().splitlines() if ln.strip()) if demos.is_file() else None,
        "rft_summary": rft,
        "rows": rows,
        "target": target,
        "updates": _updates(run, iters, mutators),
        "stages": stages,
        "wall_s_total": sum(t["wall_s"] for t in stages),
    }


def _f(x: float | None, fmt: str = ".3f") -> str:
    return "-" if x is None else format(x, fmt)


def _count(cell: list[int] | None) -> str:
    return "-" if not cell else f"{cell[0]} / {cell[1]}"


def markdown(t: dict) -> str:
    s = t["settings"]
    out = [f"paper-mini run {t['run']}"]
    if s.get("bootstrap"):
        n = "" if t["rft_demos"] is None else f" ({t['rft_demos']} demonstrations)"
        out.append(f"BOOTSTRAPPED: {s['bootstrap']}{n}.")
    out += [
        "",
        "| model | pass@1 ± SEM (n) | pass@k | Δ vs previous | format errors / turn | turns / ep | ends in submit"
        " | tokens / ep | generated / ep |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in t["rows"]:
        z = r.get("z_vs_prev")
        cells = [
            r["model"],
            f"{_f(r['pass1'])} ± {_f(r['sem'])} ({r['n']})",
            f"pass@{r['k']} {_f(r['pass_k'])}",
            "-" if z is None else f"{z:+.1f} SE",
            _f(r["format_error_rate"]),
            _f(r["turns_per_episode"], ".2f"),
            _f(r["submit_share"]),
            _f(r["tokens_per_episode"], ".0f"),
            _f(r["generated_per_episode"], ".0f"),
        ]
        out.append("| " + " | ".join(cells) + " |")
    tg = t["target"]
    zb, zd = (_f(tg[key], "+.1f") for key in ("rft_over_base_z", "dapo_over_rft_z"))
    out += [
        "",
        f"Target (RFT > base and last DAPO > RFT, each by >= 2 SE): {'reached' if tg['reached'] else 'NOT reached'}"
        f" (RFT vs base {zb} SE, last DAPO vs RFT {zd} SE).",
    ]
    kinds = sorted({m for r in t["rows"] for m in r.get("by_mutator") or {}})
    if kinds:
        out += ["", "| held-out resolved by mutator | " + " | ".join(kinds) + " |", "|---" * (len(kinds) + 1) + "|"]
        for r in t["rows"]:
            cells = [_count(r["by_mutator"].get(m)) for m in kinds]
            out.append(f"| {r['model']} | " + " | ".join(cells) + " |")
    if t["updates"]:
        out += [
            "",
            "| DAPO update | rollouts resolved (train) | by mutator | groups kept / all | samples kept"
            " | optimizer steps | tokens |",
            "|---|---|---|---|---|---|---|",
        ]
        for u in t["updates"]:
            kept = None if u["groups"] is None else u["groups"] - (u["groups_dropped"] or 0)
            out.append(
                f"| {u['iteration']} -> {u['iteration'] + 1} | {u['rollouts_resolved']} / {u['rollouts']} | "
                + (", ".join(f"{m} {_count(c)}" for m, c in u["rollouts_by_mutator"].items()) or "-")
                + " | "
                f"{'-' if kept is None else kept} / {'-' if u['groups'] is None else u['groups']} | "
                f"{'-' if u['samples_kept'] is None else u['samples_kept']} | {u['steps']} | {u['tokens']} |"
            )
    out += [
        "",
        "| stage | wall s |",
        "|---|---|",
    ]
    out += [f"| {st['stage']} | {st['wall_s']} |" for st in t["stages"]]
    out.append(f"| total | {t['wall_s_total']} |")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: paper_mini_table.py RUN_DIR", file=sys.stderr)
        return 2
    run = Path(argv[0])
    if not run.is_dir():
        print(f"paper_mini_table: {run}: no such run directory", file=sys.stderr)
        return 3
    t = collect(run)
    write_table(run, t, markdown(t))
    return 0


def write_table(run: Path, t: dict, md: str) -> None:
    """RUN/table.md and RUN/table.json, and the markdown on stdout."""
    out = run / "table"
    out.with_suffix(".md").write_text(md)
    out.with_suffix(".json").write_text(json.dumps(t, indent=1) + "\n")
    sys.stdout.write(md)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
