"""`make paper-mini-gain-table`: the table, paired statistics and learning curve of a `make paper-mini-gain` run.

    python scripts/paper_mini_gain_table.py RUN

Rows on the pre-registered held-out split (RUN/split.json: its path, sha256 -- checked against the file now --,
seed and bug kinds head the table): the base model (RUN/base/iter-0), the RFT checkpoint (RUN/rft-eval/iter-0) and
the last DAPO checkpoint of every seed directory RUN/dapo-s<seed>/. Each row: pass@1 +- SEM (unpaired, over its own
episodes), the paired comparison with RFT on the same (task, sample seed) pairs (mean difference +- SE, discordant
counts, McNemar's exact p; episodes on one side only are counted), the format-error rate, the share of episodes
ending in `submit` and the submit precision (resolved / submitted), and resolved per bug kind. Targets: RFT above
base by >= 2 SE, the last DAPO checkpoint above RFT by >= 2 SE paired, the pool pass rate rising. Then per seed the
learning curve: per iteration the active pool, its rollouts' pass rate +- SE, groups and samples kept, optimizer
steps, submit share and precision, format errors per turn, and the probe of the checkpoint (gold edit-turn log p and
its change from RFT, frame drift); the calibration's candidates and choice; wall time per stage. Writes
RUN/table.md, RUN/table.json and RUN/curve.png (matplotlib), and prints the markdown.
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paper_mini_gain_split import ids_sha256
from paper_mini_table import _by_mutator, _count, _f, _load, _records, _row, _z, write_table


def _mutators(run: Path) -> dict[str, str]:
    rows = _records(run / "heldout.jsonl") + _records(run / "pool.jsonl")
    return {r["instance_id"]: m for r in rows if r.get("instance_id") and (m := (r.get("synth") or {}).get("mutator"))}


def _rate(records: list[dict]) -> tuple[float | None, float | None]:
    """Resolved share of graded records and its SEM (sample std / sqrt(n) of the 0/1 outcomes)."""
    xs = [1.0 if (r.get("grade") or {}).get("resolved") else 0.0 for r in records]
    if not xs:
        return None, None
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return m, sd / math.sqrt(len(xs))


def _submits(records: list[dict]) -> dict:
    """Share of episodes ending in submit, submit precision (resolved / submitted), format errors per turn."""
    sub = [r for r in records if r.get("exit_status") == "submitted"]
    good = sum(bool((r.get("grade") or {}).get("resolved")) for r in sub)
    turns = sum(int((r.get("stats") or {}).get("turns") or 0) for r in records)
    fmt = sum(int((r.get("stats") or {}).get("format_errors") or 0) for r in records)
    return {
        "submit_share": len(sub) / len(records) if records else None,
        "submitted": len(sub),
        "submit_precision": good / len(sub) if sub else None,
        "format_error_rate": fmt / turns if turns else None,
    }


def _paired(a: Path, b: Path) -> dict | None:
    """The paired comparison of two evals' graded records (swerl_cli.evaluation.paired: same (task, seed) pairs)."""
    if not (a.is_file() and b.is_file()):
        return None
    from swerl_cli.evaluation.paired import paired_compare

    p = paired_compare(str(a), str(b))
    return {
        "key": p.key,
        "n_pairs": p.pairs,
        "mean_diff": p.diff_mean,
        "se": p.diff_se,
        "z": p.z,
        "b": p.a_only,
        "c": p.b_only,
        "mcnemar_p": p.p_two_sided,
        "p_one_sided": p.p_b_greater,
        "only_a": len(p.only_in_a),
        "only_b": len(p.only_in_b),
        "error_pairs": len(p.error_pairs),
    }


def _split(run: Path) -> dict:
    meta = _load(run / "split.json") or {}
    held = meta.get("heldout") or {}
    path = Path(held.get("path", run / "heldout.jsonl"))
    now = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    ids_now = ids_sha256(path) if path.is_file() else None
    return {**meta, "heldout_sha256_now": now, "heldout_unchanged": now is not None and now == held.get("sha256"),
            "heldout_ids_sha256": ids_now}  # fmt: skip


def _iters(d: Path) -> list[int]:
    return sorted(int(m.group(1)) for p in d.glob("iter-*") if (m := re.fullmatch(r"iter-(\d+)", p.name)))


def _curve(run: Path, d: Path, mutators: dict[str, str]) -> list[dict]:
    """Per iteration k of one seed directory: its rollouts (pool k) and the probe of checkpoint k."""
    out = []
    rft_probe = _load(run / "rft" / "probe.json")
    first = _records(d / "iter-0" / "graded.jsonl")
    for k in _iters(d):
        it = d / f"iter-{k}"
        records = _records(it / "graded.jsonl")
        tasks = {r.get("instance_id") for r in records}
        same, same_sem = _rate([r for r in first if r.get("instance_id") in tasks])
        summary = _load(it / "dapo.json") or {}
        counts = summary.get("counts") or {}
        probe = _load(it / "probe.json") if k else rft_probe
        rate, sem = _rate(records)
        groups, dropped = counts.get("groups"), counts.get("groups_dropped")
        out.append(
            {
                "iteration": k,
                "pool_tasks": len(_records(it / "pool.jsonl")) or None,
                "rollouts": len(records),
                "pool_pass": rate,
                "pool_sem": sem,
                "pool_pass_iter0_same_tasks": same,
                "pool_sem_iter0_same_tasks": same_sem,
                "by_mutator": _by_mutator(records, mutators),
                "groups": groups,
                "groups_kept": None if groups is None else groups - (dropped or 0),
                "samples_kept": counts.get("samples_kept"),
                "steps": summary.get("steps"),
                "optimizer_start": ((summary.get("config") or {}).get("dapo") or {}).get("optimizer_start"),
                **_submits(records),
                "probe": probe,
            }
        )
    return out


def collect(run: Path) -> dict:
    mutators = _mutators(run)
    rft_dir = run / "rft-eval" / "iter-0"
    rows = []
    for name, d in [("base", run / "base" / "iter-0"), ("RFT", rft_dir)]:
        if r := _row(name, d, mutators):
            rows.append(r)
    seeds = sorted(run.glob("dapo-s*"), key=lambda p: p.name)
    curves = {}
    for d in seeds:
        its = _iters(d)
        curves[d.name] = _curve(run, d, mutators)
        # every evaluated DAPO checkpoint is a row (a run continued with more iterations keeps its earlier eval)
        for k in its:
            if (
                k
                and (d / f"iter-{k}" / "eval.json").is_file()
                and (r := _row(f"DAPO-{k} ({d.name})", d / f"iter-{k}", mutators))
            ):
                rows.append(r)
    rft = next((r for r in rows if r["model"] == "RFT"), None)
    for r in rows:
        r.update(_submits(_records(Path(r["dir"]) / "eval-graded.jsonl")))
        if rft and r is not rft:
            r["z_vs_rft"] = _z(rft, r) if r["model"] != "base" else _z(r, rft)
            a, b = (Path(r["dir"]), rft_dir) if r["model"] == "base" else (rft_dir, Path(r["dir"]))
            r["paired_vs_rft"] = _paired(a / "eval-graded.jsonl", b / "eval-graded.jsonl")
    base = next((r for r in rows if r["model"] == "base"), None)
    dapo = [r for r in rows if r["model"].startswith("DAPO-")]
    # rising on the same tasks: the active pool shrinks to the tasks solved sometimes, so the raw rate rises by
    # selection alone; the last iteration's rollouts are compared with iteration 0's on the last pool's tasks
    rising = {}
    for name, c in curves.items():
        last = next((x for x in reversed(c) if x["rollouts"]), None)
        ok = last is not None and last["iteration"] > 0 and last["pool_pass_iter0_same_tasks"] is not None
        rising[name] = (last["pool_pass"] > last["pool_pass_iter0_same_tasks"]) if ok else None
    target = {
        "rft_over_base_z": base.get("z_vs_rft") if base else None,
        "rft_over_base_paired_z": ((base or {}).get("paired_vs_rft") or {}).get("z"),
        "dapo_over_rft_paired_z": {r["model"]: (r.get("paired_vs_rft") or {}).get("z") for r in dapo},
        "pool_rising": rising,
    }
    times = [t for p in sorted([*run.glob("times/*.json"), *run.glob("dapo-s*/times/*.json")]) if (t := _load(p))]
    for p, t in zip(sorted([*run.glob("times/*.json"), *run.glob("dapo-s*/times/*.json")]), times, strict=False):
        t["dir"] = p.parent.parent.name
    return {
        "run": str(run),
        "settings": _load(run / "paper-mini-gain.json") or {},
        "split": _split(run),
        "calibration": _load(run / "calibration" / "choice.json"),
        # the decision each seed's updates used (a later rule can be applied to the recorded candidates: --rechoose)
        "choices": {d.name: _load(d / "choice.json") for d in seeds if (d / "choice.json").is_file()},
        "rows": rows,
        "curves": curves,
        "target": target,
        "stages": sorted(times, key=lambda t: t["start"]),
        "wall_s_total": sum(t["wall_s"] for t in times),
    }


def _paired_cell(p: dict | None) -> str:
    if not p:
        return "-"
    one = p.get("only_a", 0) + p.get("only_b", 0)
    extra = f", {one} unpaired" if one else ""
    return (
        f"{_f(p['mean_diff'], '+.3f')} ± {_f(p['se'])} ({p['n_pairs']} pairs{extra}), z {_f(p.get('z'), '+.1f')}, "
        f"b/c {p['b']}/{p['c']}, McNemar p {p['mcnemar_p']:.3g} (one-sided {p['p_one_sided']:.3g})"
    )


def markdown(t: dict) -> str:
    sp = t["split"]
    held = sp.get("heldout") or {}
    out = [
        f"paper-mini-gain run {t['run']}",
        "",
        f"Pre-registered held-out split: {held.get('path')} ({held.get('tasks')} tasks, {held.get('functions')} "
        f"functions), sha256 {held.get('sha256')} ({'unchanged' if sp.get('heldout_unchanged') else 'CHANGED'}), "
        f"instance ids' sha256 {sp.get('heldout_ids_sha256')} (the same from any checkout), "
        f"seed {sp.get('seed')}, by kind {held.get('by_kind')}; written {sp.get('written_at')}, before any training. "
        f"Pool {(sp.get('pool') or {}).get('by_kind')}, demonstrations {(sp.get('demos') or {}).get('by_kind')}: no "
        "function in two parts.",
        "",
        "| model | pass@1 ± SEM (n) | Δ vs RFT (unpaired) | paired vs RFT: mean diff ± SE, z, discordant b/c, McNemar"
        " | format errors / turn | ends in submit | submit precision |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in t["rows"]:
        z = r.get("z_vs_rft")
        out.append(
            f"| {r['model']} | {_f(r['pass1'])} ± {_f(r['sem'])} ({r['n']}) | "
            f"{'-' if z is None else f'{z:+.1f} SE'} | {_paired_cell(r.get('paired_vs_rft'))} | "
            f"{_f(r['format_error_rate'])} | {_f(r['submit_share'])} | {_f(r['submit_precision'])} |"
        )
    tg = t["target"]
    dz = ", ".join(f"{m} {_f(z, '+.1f')}" for m, z in tg["dapo_over_rft_paired_z"].items()) or "-"
    rising = ", ".join(f"{k} {'yes' if v else 'no' if v is not None else '-'}" for k, v in tg["pool_rising"].items())
    out += [
        "",
        f"Targets: RFT above base by >= 2 SE: {_f(tg['rft_over_base_z'], '+.1f')} SE unpaired, "
        f"{_f(tg['rft_over_base_paired_z'], '+.1f')} paired; last DAPO above RFT by >= 2 SE paired: {dz}; "
        f"pool pass rate rising (last iteration against iteration 0 on the same tasks): {rising or '-'}.",
        "(base is paired with RFT's first samples: its seeds are theirs; z of a paired row is mean diff / SE; b = "
        "episodes only RFT resolved, c = only the other; base's row compares base -> RFT.)",
    ]
    kinds = sorted({m for r in t["rows"] for m in r.get("by_mutator") or {}})
    if kinds:
        out += ["", "| held-out resolved by kind | " + " | ".join(kinds) + " |", "|---" * (len(kinds) + 1) + "|"]
        out += [
            f"| {r['model']} | " + " | ".join(_count(r["by_mutator"].get(m)) for m in kinds) + " |" for r in t["rows"]
        ]
    for name, curve in t["curves"].items():
        out += [
            "",
            f"Learning curve, {name} (iteration k: the rollouts of checkpoint k on the active pool; probe of checkpoint"
            " k, iteration 0 = RFT):",
            "",
            "| k | pool tasks | pool pass ± SE (n) | same tasks at k = 0 | groups kept / all | samples kept | steps"
            " | start | ends in submit | submit precision | format errors / turn | gold edit log p (Δ vs RFT)"
            " | frame drift |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in curve:
            pr = c["probe"] or {}
            out.append(
                f"| {c['iteration']} | {c['pool_tasks'] or '-'} | {_f(c['pool_pass'])} ± {_f(c['pool_sem'])} "
                f"({c['rollouts']}) | {_f(c['pool_pass_iter0_same_tasks'])} | "
                f"{c['groups_kept'] if c['groups_kept'] is not None else '-'} / "
                f"{c['groups'] if c['groups'] is not None else '-'} | {c['samples_kept'] or '-'} | "
                f"{c['steps'] if c['steps'] is not None else '-'} | {c['optimizer_start'] or '-'} | "
                f"{_f(c['submit_share'])} | {_f(c['submit_precision'])} | {_f(c['format_error_rate'])} | "
                f"{_f(pr.get('gold_edit_logprob'), '.4f')} ({_f(pr.get('gold_edit_delta'), '+.4f')}) | "
                f"{_f(pr.get('frame_drift'), '.4f')} |"
            )
    cal = t["calibration"]
    if cal:
        out += ["", f"Optimizer start: {cal['candidate']} ({cal['rule']}); flags `{' '.join(cal['flags'])}`.", ""]
        out += [
            "| candidate | gold Δ | gold edit Δ | frame drift | gold / drift | steps |",
            "|---|---|---|---|---|---|",
        ]
        for c in cal["candidates"]:
            ratio = (
                c["gold_delta"] / c["frame_drift"] if c.get("gold_delta") is not None and c.get("frame_drift") else None
            )
            out.append(
                f"| {c['candidate']} | {_f(c.get('gold_delta'), '+.5f')} | {_f(c.get('gold_edit_delta'), '+.5f')} | "
                f"{_f(c.get('frame_drift'), '.5f')} | {_f(ratio, '+.3f')} | {c.get('steps')} |"
            )
    out += [""] if t.get("choices") else []
    for name, ch in (t.get("choices") or {}).items():
        again = (ch.get("inputs") or {}).get("rechosen_from")
        note = f", applied to the candidates recorded in {again}" if again else ""
        out.append(f"{name}'s updates: {ch['candidate']} ({ch['rule']}{note}); flags `{' '.join(ch['flags'])}`.")
    out += ["", "| stage | dir | wall s |", "|---|---|---|"]
    out += [f"| {st['stage']} | {st.get('dir', '')} | {st['wall_s']} |" for st in t["stages"]]
    out.append(f"| total | | {t['wall_s_total']} |")
    return "\n".join(out) + "\n"


def plot(t: dict, path: Path) -> None:
    """The learning curve: pool pass rate +- SE, gold edit log p, frame drift, submit share and precision."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for i, (name, curve) in enumerate(t["curves"].items()):
        color = f"C{i}"  # one colour per seed in every panel
        rolled = [c for c in curve if c["pool_pass"] is not None]  # the last checkpoint has a probe, no rollouts
        ks = [c["iteration"] for c in rolled]
        axes[0].errorbar(ks, [c["pool_pass"] for c in rolled], yerr=[c["pool_sem"] or 0 for c in rolled], marker="o",
                         capsize=3, color=color, label=f"{name}: pool k")  # fmt: skip
        axes[0].plot(ks, [c["pool_pass_iter0_same_tasks"] for c in rolled], marker="x", ls=":",
                     color=color, alpha=0.6, label=f"{name}: same tasks at k = 0")  # fmt: skip
        pk = [c for c in curve if c["probe"]]
        axes[1].plot(
            [c["iteration"] for c in pk],
            [c["probe"]["gold_edit_logprob"] for c in pk],
            marker="o",
            color=color,
            label=name,
        )
        axes[2].plot([c["iteration"] for c in pk], [c["probe"].get("frame_drift") for c in pk], marker="o",
                     color=color, label=name)  # fmt: skip
        axes[3].plot(ks, [c["submit_share"] for c in rolled], marker="o", color=color,
                     label=f"{name} submit share")  # fmt: skip
        axes[3].plot(ks, [c["submit_precision"] for c in rolled], marker="s", ls="--", color=color,
                     label=f"{name} precision")  # fmt: skip
    titles = [
        "pool pass rate ± SE",
        "gold edit-turn log p (held out)",
        "frame drift vs RFT",
        "submit share / precision",
    ]
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("iteration (checkpoint k)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: paper_mini_gain_table.py RUN_DIR", file=sys.stderr)
        return 2
    run = Path(argv[0])
    if not (run / "split.json").is_file():
        print(f"paper_mini_gain_table: {run}/split.json: no such file (not a paper-mini-gain run)", file=sys.stderr)
        return 3
    t = collect(run)
    md = markdown(t)
    if t["curves"]:
        plot(t, run / "curve.png")
        md += "\n![learning curve](curve.png)\n"
    write_table(run, t, md)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
