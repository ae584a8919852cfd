"""`make paper-mini-gain` (mk/paper-mini-gain.mk, issue 41): the dry run orders the stages (split before any
training, no sampled eval between DAPO iterations, every eval on the same seeds), the pre-registered split deals
whole functions and is never rewritten, and the calibration's chosen update is adopted only on its own batch."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def _dry_run(target: str, run: Path, *variables: str) -> str:
    proc = subprocess.run(
        ["make", "-C", str(ROOT), "--no-print-directory", "-n", target, f"PG_RUNS={run}", *variables],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return " ".join(proc.stdout.replace("\\\n", " ").split())


def test_dry_run_splits_before_training_and_evaluates_on_one_seed(tmp_path: Path):
    run = tmp_path / "pg"
    out = _dry_run("paper-mini-gain", run)
    stages = ["split", "rft-demos", "rft", "probe-data", "probe-rft", "base-eval", "rft-eval"]
    at = [out.index(f"paper-mini-stage.sh {run} {s} ") for s in stages]
    assert at == sorted(at)
    assert f"paper_mini_gain_split.py .cache/synth/toolz-gain/train.jsonl 0 {run} --heldout 32 --pool 12" in out
    assert "PM_RFT_ARGS=--save-optimizer" in out
    assert "EVAL_SAMPLES=2 K=0 rl-eval-start" in out  # the base model: 2 samples per task, pairing with the first 2
    assert out.count("EVAL_SEED=0") >= 2
    assert "paper-mini-gain-dapo" in out
    assert "paper_mini_gain_table.py" in out
    dapo = _dry_run("paper-mini-gain-dapo", run, "PG_DAPO_SEED=1")
    assert f"D={run}/dapo-s1" in dapo
    assert "ACTIVE_POOL=1" in dapo
    assert "SEED=1 EVAL_SEED=0" in dapo
    assert "rl-eval " not in dapo  # no sampled eval between iterations: the probe only
    assert dapo.index("rl-collect") < dapo.index("dapo_calibrate.py") < dapo.index("rl-update")
    assert "--init-from" in dapo
    assert "--choice" in dapo
    assert "paper_mini_probe.py" in dapo
    assert not run.exists()


def _rows(n_functions: int, per: int) -> list[dict]:
    kinds = ["off_by_one", "op_flip"]
    return [
        {"instance_id": f"t{f}-{i}", "synth": {"function": f"m.py::f{f}", "mutator": kinds[(f + i) % 2]}}
        for f in range(n_functions)
        for i in range(per)
    ]


def _split(tasks: Path, run: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "scripts" / "paper_mini_gain_split.py"), str(tasks), "7", str(run), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_split_deals_whole_functions_and_is_pre_registered(tmp_path: Path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in _rows(30, 3)))
    proc = _split(tasks, tmp_path / "run", "--heldout", "32", "--pool", "12", "--demos", "20")
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "run"
    parts = {
        p: [json.loads(x) for x in (run / f).read_text().splitlines()]
        for p, f in (("heldout", "heldout.jsonl"), ("pool", "pool.jsonl"), ("demos", "demo-tasks.jsonl"))
    }
    fns = {p: {r["synth"]["function"] for r in rows} for p, rows in parts.items()}
    assert not fns["heldout"] & fns["pool"]
    assert not fns["heldout"] & fns["demos"]
    assert not fns["pool"] & fns["demos"]
    assert len(parts["heldout"]) == 32
    assert len(parts["pool"]) >= 12
    assert len(parts["demos"]) == 20
    meta = json.loads((run / "split.json").read_text())
    assert meta["seed"] == 7
    assert meta["heldout"]["sha256"] == hashlib.sha256((run / "heldout.jsonl").read_bytes()).hexdigest()
    ids = "".join(f"{json.loads(x)['instance_id']}\n" for x in (run / "heldout.jsonl").read_text().splitlines())
    assert meta["heldout"]["ids_sha256"] == hashlib.sha256(ids.encode()).hexdigest()
    assert sum(meta["heldout"]["by_kind"].values()) == 32
    assert meta["source"]["sha256"] == hashlib.sha256(tasks.read_bytes()).hexdigest()
    before = (run / "heldout.jsonl").read_bytes()
    again = _split(tasks, run)
    assert again.returncode == 1
    assert "not rewritten" in again.stderr
    assert (run / "heldout.jsonl").read_bytes() == before
    other = _split(tasks, tmp_path / "run2", "--heldout", "32", "--pool", "12", "--demos", "20")
    assert other.returncode == 0
    assert (tmp_path / "run2" / "heldout.jsonl").read_bytes() == before
    # Another checkout: the same tasks with their bundle elsewhere. The file's sha256 moves, the ids' does not.
    moved = tmp_path / "moved.jsonl"
    moved.write_text("".join(json.dumps({**r, "repo_source": "/elsewhere/x.bundle"}) + "\n" for r in _rows(30, 3)))
    assert _split(moved, tmp_path / "run3", "--heldout", "32", "--pool", "12", "--demos", "20").returncode == 0
    meta3 = json.loads((tmp_path / "run3" / "split.json").read_text())
    assert meta3["heldout"]["sha256"] != meta["heldout"]["sha256"]
    assert meta3["heldout"]["ids_sha256"] == meta["heldout"]["ids_sha256"]


def test_demo_extra_tops_up_the_demonstrations_with_other_functions_only(tmp_path: Path):
    tasks, extra = tmp_path / "tasks.jsonl", tmp_path / "extra.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in _rows(16, 3)))
    others = [{"instance_id": f"x{f}", "synth": {"function": f"m.py::f{f}", "mutator": "swap_args"}} for f in range(40)]
    extra.write_text("".join(json.dumps(r) + "\n" for r in others))
    proc = _split(
        tasks, tmp_path / "run", "--heldout", "32", "--pool", "6", "--demos", "30", "--demo-extra", str(extra)
    )
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "run"
    fns = {f: {json.loads(x)["synth"]["function"] for x in (run / f).read_text().splitlines()}
           for f in ("heldout.jsonl", "pool.jsonl", "demo-tasks.jsonl")}  # fmt: skip
    assert not fns["demo-tasks.jsonl"] & (fns["heldout.jsonl"] | fns["pool.jsonl"])
    meta = json.loads((run / "split.json").read_text())
    assert meta["demos"]["tasks"] == 30
    assert meta["demos"]["by_kind"]["swap_args"] == 30 - sum(
        v for k, v in meta["demos"]["by_kind"].items() if k != "swap_args"
    )
    assert meta["demo_extra"][0]["path"] == str(extra)


def test_split_refuses_a_family_too_small_and_a_bad_line(tmp_path: Path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in _rows(10, 3)))
    small = _split(tasks, tmp_path / "run")
    assert small.returncode == 1
    assert "too few tasks" in small.stderr
    assert not (tmp_path / "run" / "split.json").exists()
    tasks.write_text(tasks.read_text() + "{nope\n")
    bad = _split(tasks, tmp_path / "run")
    assert bad.returncode == 3
    assert f"{tasks}:31" in bad.stderr
    assert "Traceback" not in bad.stderr


def _calibration(tmp_path: Path, graded: Path) -> Path:
    cal = tmp_path / "cal"
    (cal / "carried-v").mkdir(parents=True)
    (cal / "carried-v" / "config.json").write_text("{}")
    (cal / "carried-v.metrics.jsonl").write_text('{"step": 1}\n')
    (cal / "carried-v.summary.json").write_text('{"steps": 2, "checkpoint": "x"}\n')
    choice = cal / "choice.json"
    choice.write_text(
        json.dumps({"candidate": "carried-v", "flags": [], "inputs": {"graded": str(graded), "out": str(cal)}})
    )
    return choice


def test_adopt_takes_the_chosen_update_only_on_its_own_batch(tmp_path: Path):
    d = tmp_path / "dapo-s0"
    (d / "iter-0").mkdir(parents=True)
    choice = _calibration(tmp_path, d / "iter-0" / "graded.jsonl")
    script = [sys.executable, str(ROOT / "scripts" / "paper_mini_gain_adopt.py"), str(choice)]
    other = tmp_path / "dapo-s1"
    (other / "iter-0").mkdir(parents=True)
    skip = subprocess.run([*script, str(other)], capture_output=True, text=True, timeout=60)
    assert skip.returncode == 0
    assert "updates anew" in skip.stderr
    assert not (other / "iter-0" / "dapo.json").exists()
    done = subprocess.run([*script, str(d)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (d / "iter-1" / "ckpt" / "config.json").exists()
    assert json.loads((d / "iter-0" / "dapo.json").read_text())["steps"] == 2
    assert (d / "iter-0" / "metrics.jsonl").read_text() == '{"step": 1}\n'


def _eval_dir(d: Path, outcomes: dict[tuple[int, int], bool], submit_all: bool = True) -> None:
    """graded eval records (task t, sample s) -> resolved, and eval.json from the real `swerl eval --json`."""
    from tests.records import graded

    d.mkdir(parents=True)
    recs = []
    for (t, s), ok in sorted(outcomes.items()):
        r = graded(f"t{t}", s, ok, run="eval", turns=4)
        r["stats"]["format_errors"] = 1
        r["exit_status"] = "submitted" if (submit_all or ok) else "max_turns"
        recs.append(json.dumps(r))
    (d / "eval-graded.jsonl").write_text("\n".join(recs) + "\n")
    ev = subprocess.run([sys.executable, "-m", "swerl_cli", "eval", "--json", str(d / "eval-graded.jsonl")],
                        capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    (d / "eval.json").write_text(ev.stdout)


def test_table_pairs_every_checkpoint_with_rft_and_draws_the_curve(tmp_path: Path):
    from tests.records import graded

    run = tmp_path / "pg"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in _rows(20, 2)))
    assert _split(tasks, run, "--heldout", "4", "--pool", "2", "--demos", "4").returncode == 0
    # RFT resolves sample 0 of every task (4 of 8); base nothing on samples 0-1 of each task (4 pairs with RFT,
    # 4 RFT episodes unpaired); DAPO-1 resolves samples 0 and 1 of every task: b = 0, c = 4 of 8 pairs
    _eval_dir(run / "base" / "iter-0", {(t, 0): False for t in range(4)}, submit_all=False)
    _eval_dir(run / "rft-eval" / "iter-0", {(t, s): s == 0 for t in range(4) for s in range(2)})
    d = run / "dapo-s0"
    _eval_dir(d / "iter-1", {(t, s): True for t in range(4) for s in range(2)})
    for k, resolved in ((0, [0, 2]), (1, [0, 1, 2, 3])):
        rollouts = [json.dumps(graded(f"p{i // 4}", i % 4, i in resolved, run=f"iter-{k}")) for i in range(8)]
        (d / f"iter-{k}").mkdir(parents=True, exist_ok=True)
        (d / f"iter-{k}" / "graded.jsonl").write_text("\n".join(rollouts) + "\n")
    summary = {"steps": 1, "counts": {"groups": 2, "groups_dropped": 1, "samples_kept": 4},
               "config": {"dapo": {"optimizer_start": "init-second"}}}  # fmt: skip
    (d / "iter-0" / "dapo.json").write_text(json.dumps(summary))
    (run / "rft").mkdir()
    (run / "rft" / "probe.json").write_text(json.dumps({"gold_edit_logprob": -0.5, "frame_drift": 0.0}))
    (d / "iter-2").mkdir()  # the last checkpoint: a probe, no rollouts
    (d / "iter-2" / "probe.json").write_text(json.dumps({"gold_edit_logprob": -0.3, "frame_drift": 0.03}))
    (d / "iter-1" / "probe.json").write_text(json.dumps({"gold_edit_logprob": -0.4, "gold_edit_delta": 0.1,
                                                         "frame_drift": 0.02}))  # fmt: skip
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "paper_mini_gain_table.py"), str(run)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    t = json.loads((run / "table.json").read_text())
    rows = {r["model"]: r for r in t["rows"]}
    assert list(rows) == ["base", "RFT", "DAPO-1 (dapo-s0)"]
    dapo = rows["DAPO-1 (dapo-s0)"]["paired_vs_rft"]
    assert (dapo["n_pairs"], dapo["b"], dapo["c"], dapo["mean_diff"]) == (8, 0, 4, 0.5)
    assert dapo["mcnemar_p"] == 0.125  # 2 x (1/2)^4
    base = rows["base"]["paired_vs_rft"]  # base -> RFT
    assert (base["n_pairs"], base["c"], base["only_b"]) == (4, 4, 4)
    assert rows["base"]["submit_share"] == 0
    assert rows["RFT"]["submit_precision"] == 0.5
    curve = t["curves"]["dapo-s0"]
    assert [c["pool_pass"] for c in curve] == [0.25, 0.5, None]
    assert curve[0]["groups_kept"] == 1
    assert curve[0]["optimizer_start"] == "init-second"
    assert curve[0]["probe"]["gold_edit_logprob"] == -0.5  # checkpoint 0 is RFT: its probe
    assert curve[1]["probe"]["gold_edit_delta"] == 0.1
    assert curve[1]["pool_pass_iter0_same_tasks"] == 0.25  # the rise is measured on the same tasks
    assert t["target"]["pool_rising"] == {"dapo-s0": True}
    assert t["split"]["heldout_unchanged"] is True
    assert t["split"]["heldout_ids_sha256"] == json.loads((run / "split.json").read_text())["heldout"]["ids_sha256"]
    assert (run / "curve.png").stat().st_size > 1000
    md = (run / "table.md").read_text()
    assert "(unchanged)" in md
    assert "b/c 0/4, McNemar p 0.125" in md
    assert "![learning curve](curve.png)" in md
    (run / "heldout.jsonl").write_text("{}\n")
    again = subprocess.run([sys.executable, str(ROOT / "scripts" / "paper_mini_gain_table.py"), str(run)],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert "CHANGED" in again.stdout
