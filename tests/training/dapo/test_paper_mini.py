"""`make paper-mini` (mk/paper-mini.mk): its dry run names every stage through the real CLI and the RL loop's
targets without writing anything; the bootstrap's readable demonstrations (policy gold-steps) turn a gold patch into
editor commands that, run through the real editor script, fix the repository; the table script reads a run directory
in its layout (graded records made here, eval.json by the real `swerl eval --json`)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import IN_CI, ROOT
from tests.records import graded


def _dry_run(target: str, run: Path, *variables: str) -> str:
    """What `make -n TARGET PM_RUNS=run VARIABLES...` prints (it must succeed)."""
    proc = subprocess.run(
        ["make", "-C", str(ROOT), "--no-print-directory", "-n", target, f"PM_RUNS={run}", *variables],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_dry_run_names_every_stage_and_writes_nothing(tmp_path: Path):
    run = tmp_path / "pm"
    out = _dry_run("paper-mini", run, "PM_ITERS=3")
    for stage in ("rft-demos", "rft", "base-eval", "eval-0", "rollouts-$k", "dapo-$k"):
        assert f"paper-mini-stage.sh {run} {stage} " in out
    # the trainer runs before any vLLM server is up; the RFT checkpoint is evaluated even with PM_ITERS=0
    assert out.index(f"{run} rft ") < out.index(f"{run} base-eval ") < out.index(f"{run} eval-0 ")
    assert out.index(f"{run} eval-0 ") < out.index("for k in")
    # base eval of the base model, the RL loop from the RFT checkpoint on one vLLM server, the stage-2 pool rule
    assert f"RUNS={run}/base MODEL=.cache/smollm2-135m-instruct K=0 rl-eval-start" in out
    assert f"POLICY=vllm-server MODEL={run}/rft/ckpt" in out
    assert "rl-stage2-pool" in out
    assert "STAGE=2 T_MAX=12 MAX_TURNS=12 EPS_HIGH=0.26" in out
    assert "-c examples/paper-mini/collect.yaml" in out  # the small-model scaffold, in demos and every eval
    demos = _dry_run("paper-mini-demos", run)
    assert "collect --policy gold-steps --run bootstrap-gold-demos -c examples/paper-mini/collect.yaml" in demos
    # PM_DEMO_ARGS reaches the demonstrations' collect only, and the run's paper-mini.json records it
    mistakes = _dry_run("paper-mini-demos", run, "PM_DEMO_ARGS=--gold-mistakes 0.5")
    words = " ".join(mistakes.replace("\\\n", " ").split())
    assert words.count("--max-new-tokens 96 --gold-mistakes 0.5 --concurrency 6") == 1
    whole = _dry_run("paper-mini", run, "PM_DEMO_ARGS=--gold-mistakes 0.5")
    assert "gold-mistakes" not in whole.replace('"demo_args": "--gold-mistakes 0.5"', "")
    assert "paper_mini_table.py" in out
    assert f"report {run}/base {run} -o {run}/report.html" in out
    assert not run.exists()


def test_a_stage_runs_once_records_its_time_and_is_skipped_on_rerun(tmp_path: Path):
    """scripts/paper-mini-stage.sh is what makes the run resumable: a stage whose output exists is not run again;
    a failed stage leaves no time record, so the next run does it again."""
    run, out = tmp_path / "pm", tmp_path / "pm" / "rft.json"
    stage = ["bash", str(ROOT / "scripts/paper-mini-stage.sh"), str(run), "rft", str(out), "--"]
    failed = subprocess.run([*stage, "false"], capture_output=True, text=True, timeout=60)
    assert failed.returncode != 0
    assert not (run / "times" / "rft.json").exists()
    done = subprocess.run([*stage, "sh", "-c", f"echo '{{}}' > {shlex.quote(str(out))}"], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    timing = json.loads((run / "times" / "rft.json").read_text())
    assert timing["stage"] == "rft"
    assert timing["end"] - timing["start"] == timing["wall_s"] >= 0
    again = subprocess.run([*stage, "false"], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0
    assert "exists, skipping" in again.stderr
    assert json.loads((run / "times" / "rft.json").read_text()) == timing


def test_disjoint_and_other_pool_dry_runs_draw_the_pool_apart_from_the_demos(tmp_path: Path):
    run = tmp_path / "pm"
    out = _dry_run("paper-mini", run, "PM_DISJOINT=1")
    assert "scripts/paper_mini_split.py " in out
    assert f"0 {run}/demo-tasks.jsonl {run}/pool-tasks.jsonl" in out  # seed, the RFT half, DAPO's half
    assert f"cat {run}/pool-tasks.jsonl | shuf -n 16" in out
    assert f"cat {run}/demo-tasks.jsonl | shuf -n 50" in _dry_run("paper-mini-demos", run, "PM_DISJOINT=1")
    assert f"cat {run}/demo-tasks.jsonl" not in _dry_run("paper-mini-demos", run)  # off by default
    assert f"cat {run}/demo-tasks.jsonl" not in _dry_run("paper-mini-demos", run, "PM_DISJOINT=0")
    other = _dry_run("paper-mini", run, f"PM_POOL_SRC={tmp_path}/lib.jsonl")  # a pool from another task family
    assert f"cat {tmp_path}/lib.jsonl | shuf -n 16" in other
    assert f'"pool": "{tmp_path}/lib.jsonl"' in other
    assert not run.exists()


def test_flip_pool_target_synthesizes_flips_then_keeps_the_fresh_ones(tmp_path: Path):
    out = _dry_run("synth-pool-flip", tmp_path / "unused", "-B")  # -B: every step, whatever .cache/ holds
    # the flips of every function (--holdout 0), then cut against the located family's held-out functions
    assert "--mutators off_by_one,op_flip --holdout 0" in out
    pool = "scripts/paper_mini_pool.py .cache/synth/toolz-flip/train.jsonl"
    assert out.index("-o .cache/synth/toolz-flip ") < out.index(pool)
    assert ".cache/synth/toolz-located .cache/synth/toolz-flip-pool.jsonl" in out


def test_split_halves_share_no_function_and_keep_every_task(tmp_path: Path):
    rows = [
        {"instance_id": f"t{i}", "synth": {"function": f"m.py::f{i // 2}"}}
        for i in range(20)  # two tasks per function
    ] + [{"instance_id": "plain"}]
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in rows))
    demos, pool = tmp_path / "demos.jsonl", tmp_path / "pool.jsonl"
    script = ROOT / "scripts" / "paper_mini_split.py"
    outputs = []
    for _ in range(2):  # deterministic in the seed
        proc = subprocess.run(
            [sys.executable, str(script), str(train), "3", str(demos), str(pool)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append((demos.read_text(), pool.read_text()))
    assert outputs[0] == outputs[1]
    d = [json.loads(x) for x in demos.read_text().splitlines()]
    p = [json.loads(x) for x in pool.read_text().splitlines()]

    def functions(part: list[dict]) -> set[str]:
        return {(r.get("synth") or {}).get("function", r["instance_id"]) for r in part}

    assert not functions(d) & functions(p)
    assert sorted(r["instance_id"] for r in d + p) == sorted(r["instance_id"] for r in rows)
    assert 8 <= len(d) <= 13
    assert 8 <= len(p) <= 13
    assert "demo tasks" in proc.stderr
    assert proc.stdout == ""
    train.write_text(train.read_text() + "{not json\n")
    bad = subprocess.run(
        [sys.executable, str(script), str(train), "3", str(demos), str(pool)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith(f"{train}:22: not valid JSON")  # one line naming file and line
    assert bad.stderr.count("\n") == 1
    assert [json.loads(x) for x in demos.read_text().splitlines()] == d  # what was written is kept


def test_pool_keeps_fresh_tasks_outside_the_held_out_functions(tmp_path: Path):
    def task(iid: str, function: str) -> str:
        return json.dumps({"instance_id": iid, "synth": {"function": function}}) + "\n"

    family = tmp_path / "family"
    family.mkdir()
    (family / "heldout.jsonl").write_text(task("h1", "m.py::held"))
    (family / "train.jsonl").write_text(task("t1", "m.py::seen"))
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text(
        task("c1", "m.py::held") + task("t1", "m.py::seen") + task("c2", "m.py::seen") + task("c3", "m.py::new")
    )
    out = tmp_path / "pool.jsonl"
    script = ROOT / "scripts" / "paper_mini_pool.py"
    cmd = [sys.executable, str(script), str(candidates), str(family), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # a held-out function's fresh bug and a known task are left out; a fresh bug in a train function is kept
    assert [json.loads(x)["instance_id"] for x in out.read_text().splitlines()] == ["c2", "c3"]
    assert "2 of 4 candidates kept" in proc.stderr
    candidates.write_text(candidates.read_text() + "[1]\n{")
    bad = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert bad.stderr.startswith(f"{candidates}:5:")
    assert bad.stderr.count("\n") == 1
    assert [json.loads(x)["instance_id"] for x in out.read_text().splitlines()] == ["c2", "c3"]


BUGGY = "def add(a, b):\n    return a - b\n\n\ndef half(x):\n    return x // 2\n"
FIXED = (
    "def add(a, b):\n    return a + b\n\n\ndef half(x):\n    if x < 0:\n        return -(-x // 2)\n    return x // 2\n"
)
TESTS = (
    "from m import add, half\n\n\ndef test_add():\n    assert add(2, 1) == 3\n\n\n"
    "def test_half():\n    assert half(-3) == -1\n"
)


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env).stdout


def test_gold_steps_demo_is_readable_and_fixes_the_repo_through_the_editor(tmp_path: Path):
    """A two-block gold patch (one changed line, one inserted guard) becomes open/edit turns, bottom-up, then the
    failing test and submit; the commands, run through the real editor script, leave the fixed file."""
    from swerl_cli.policy import BACKENDS
    from swerl_cli.policy.gold_steps import steps

    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "m.py").write_text(FIXED)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "fixed")
    (repo / "m.py").write_text(BUGGY)
    patch = _git(repo, "diff", "-R")  # the gold patch takes the buggy file to the fixed one
    task = {"patch": patch, "FAIL_TO_PASS": ["tests/test_m.py::test_half", "tests/test_m.py::test_add"]}
    plan = steps(task)
    assert plan is not None
    assert [c for _, c in plan] == [
        "open m.py 6",
        "edit --file m.py 6:5 '    if x < 0:\n        return -(-x // 2)'",
        "open m.py 2",
        "edit --file m.py 2:2 '    return a + b'",
        "python3 -m pytest -q tests/test_m.py::test_half",
        "submit",
    ]
    assert all("base64" not in c and "git apply" not in c for _, c in plan)
    assert BACKENDS.cls("gold-steps").__name__ == "GoldStepsPolicy"
    (repo / "tests" / "test_m.py").write_text(TESTS)
    (repo / "conftest.py").write_text("")
    tools = ROOT / "src" / "swerl_cli" / "agent" / "tools_bin" / "swerl_tools.py"
    shell = f'open() {{ {sys.executable} {tools} open "$@"; }}; edit() {{ {sys.executable} {tools} edit "$@"; }}; '
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "SWERL_STATE": str(tmp_path / "state"),
        "SWERL_WINDOW": "5",
    }
    (tmp_path / "state").write_text("1\n")
    outs = []
    for _, command in plan[:-1]:
        proc = subprocess.run(["bash", "-c", shell + command], cwd=repo, capture_output=True, text=True, env=env)
        outs.append(proc.stdout)
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    assert (repo / "m.py").read_text() == FIXED
    assert "2:    return a - b" in outs[2]  # the window shows the line the next turn edits
    assert "1 passed" in outs[-1]


def test_gold_steps_quotes_and_falls_back_to_the_plain_apply():
    from swerl_cli.policy.gold_steps import patch_blocks, quote

    assert quote("x = 'a'") == "\"x = 'a'\""
    assert quote("""s = '$x' + "y\"""") == shlex.quote("""s = '$x' + "y\"""")
    new_file = "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+x = 1\n"
    assert patch_blocks(new_file) is None


def _eval(d: Path, outcomes: list[list[bool]], fmt: int, submit: bool) -> None:
    d.mkdir(parents=True)
    recs = []
    for t, samples in enumerate(outcomes):
        for s, ok in enumerate(samples):
            r = graded(f"t{t}", s, ok, run="eval-0", turns=4, tokens=500 + 100 * s)
            r["stats"]["format_errors"] = fmt
            r["exit_status"] = "submitted" if submit else "max_turns"
            recs.append(json.dumps(r))
    (d / "eval-graded.jsonl").write_text("\n".join(recs) + "\n")
    ev = subprocess.run(
        [sys.executable, "-m", "swerl_cli", "eval", "--json", str(d / "eval-graded.jsonl")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    (d / "eval.json").write_text(ev.stdout)


def test_table_reads_the_run_dir(tmp_path: Path):
    run = tmp_path / "run"
    none, half, most = [[False, False]] * 8, [[True, False]] * 8, [[True, True]] * 6 + [[True, False]] * 2
    _eval(run / "base" / "iter-0", none, fmt=4, submit=False)
    _eval(run / "iter-0", half, fmt=1, submit=True)
    _eval(run / "iter-1", most, fmt=0, submit=True)
    rollouts = [json.dumps(graded(f"p{i // 4}", i % 4, i in (0, 5), run="iter-0")) for i in range(8)]
    # the tasks' synth mutators: held-out t0-t3 swap_args, t4-t7 off_by_one; the pool's p0, p1 op_flip
    held = [{"instance_id": f"t{i}", "synth": {"mutator": "swap_args" if i < 4 else "off_by_one"}} for i in range(8)]
    (run / "heldout.jsonl").write_text("".join(json.dumps(row) + "\n" for row in held))
    pool = [{"instance_id": f"p{i}", "synth": {"mutator": "op_flip"}} for i in range(2)]
    (run / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in pool))
    (run / "iter-0" / "graded.jsonl").write_text("\n".join(rollouts) + "\n")
    counts = {"groups": 2, "groups_dropped": 1, "samples_kept": 4}
    (run / "iter-0" / "dapo.json").write_text(json.dumps({"steps": 1, "tokens": 1234, "counts": counts}))
    (run / "rft").mkdir()
    (run / "rft" / "demos.jsonl").write_text("{}\n{}\n{}\n")
    (run / "paper-mini.json").write_text(json.dumps({"bootstrap": "gold demos"}))
    (run / "times").mkdir()
    for i, (stage, s) in enumerate([("base-eval", 30), ("rft", 20), ("dapo-0", 40)]):
        (run / "times" / f"{stage}.json").write_text(json.dumps({"stage": stage, "wall_s": s, "start": i, "end": i}))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "paper_mini_table.py"), str(run)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    table = json.loads((run / "table.json").read_text())
    rows = {r["model"]: r for r in table["rows"]}
    assert list(rows) == ["base", "RFT", "DAPO-1"]
    assert rows["base"]["pass1"] == 0
    assert rows["base"]["format_error_rate"] == 1.0
    assert rows["base"]["submit_share"] == 0
    assert rows["RFT"]["submit_share"] == 1
    assert rows["RFT"]["pass1"] == 0.5
    assert rows["RFT"]["pass_k"] == 1.0
    assert rows["RFT"]["k"] == 2
    assert rows["RFT"]["format_error_rate"] == 0.25
    assert rows["RFT"]["turns_per_episode"] == 4
    assert rows["DAPO-1"]["pass1"] == 14 / 16
    assert rows["DAPO-1"]["tokens_per_episode"] == 550
    # base -> RFT: 0.5 / sem(8 ones, 8 zeros) = 0.5 / 0.129 = 3.9 SE; RFT -> DAPO-1: 0.375 / 0.15 = 2.5 SE
    assert table["target"]["rft_over_base_z"] > 2
    assert 2 < table["target"]["dapo_over_rft_z"] < 3
    assert table["target"]["reached"] is True
    assert table["rft_demos"] == 3
    assert table["wall_s_total"] == 90
    md = (run / "table.md").read_text()
    assert md == proc.stdout
    assert "BOOTSTRAPPED: gold demos (3 demonstrations)." in md
    assert "| RFT | 0.500 ± 0.129 (16) | pass@2 1.000 |" in md
    assert "Target (RFT > base and last DAPO > RFT, each by >= 2 SE): reached" in md
    assert "| 0 -> 1 | 2 / 8 | op_flip 2 / 8 | 1 / 2 | 4 | 1 | 1234 |" in md  # what the DAPO update learnt from
    assert rows["RFT"]["by_mutator"] == {"off_by_one": [4, 8], "swap_args": [4, 8]}
    assert rows["DAPO-1"]["by_mutator"] == {"off_by_one": [6, 8], "swap_args": [8, 8]}
    assert "| held-out resolved by mutator | off_by_one | swap_args |" in md
    assert "| base | 0 / 8 | 0 / 8 |" in md
    assert "| DAPO-1 | 6 / 8 | 8 / 8 |" in md


def test_table_target_not_reached_and_a_missing_run(tmp_path: Path):
    run = tmp_path / "run"
    flat = [[False, False]] * 4
    _eval(run / "base" / "iter-0", flat, fmt=0, submit=False)
    _eval(run / "iter-0", flat, fmt=0, submit=False)
    script = str(ROOT / "scripts" / "paper_mini_table.py")
    proc = subprocess.run([sys.executable, script, str(run)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "NOT reached" in proc.stdout
    assert json.loads((run / "table.json").read_text())["target"]["dapo_over_rft_z"] is None
    missing = subprocess.run([sys.executable, script, str(tmp_path / "nope")], capture_output=True, text=True)
    assert missing.returncode == 3
    assert missing.stderr.count("\n") == 1
    assert "no such run directory" in missing.stderr


def test_marked_template_renders_smollm2s_bytes_and_marks_assistant_tokens(tmp_path: Path):
    model = ROOT / ".cache" / "smollm2-135m-instruct"
    if not (model / "config.json").exists():
        if IN_CI:
            pytest.fail("the real model is missing (make real-model)")
        pytest.skip("the real model is absent (make real-model)")
    out = tmp_path / "marked"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "paper_mini_template.py"), str(model), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(out)
    conv = [
        {"role": "system", "content": "Fix it."},
        {"role": "user", "content": "bug"},
        {"role": "assistant", "content": "look\n```command\nls\n```"},
        {"role": "user", "content": "a.py"},
    ]
    rendered = tok.apply_chat_template(conv, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    ids, mask = rendered["input_ids"], rendered["assistant_masks"]
    assert tok.decode([t for t, m in zip(ids, mask, strict=True) if m]) == "look\n```command\nls\n```<|im_end|>"
    plain = AutoTokenizer.from_pretrained(model).apply_chat_template(conv, tokenize=True, return_dict=True)
    assert ids == plain["input_ids"]


def test_async_compare_reads_both_loops(tmp_path: Path):
    """scripts/paper_mini_async.py: the last DAPO checkpoint of RUN (sync) against RUN/async's, in SE of the
    difference, the one-sided 2-SE check, RL wall time of each loop and the staleness of each async update."""
    run = tmp_path / "run"
    half, most = [[True, False]] * 8, [[True, True]] * 6 + [[True, False]] * 2
    _eval(run / "iter-0", half, fmt=0, submit=True)
    _eval(run / "iter-2", half, fmt=0, submit=True)
    _eval(run / "async" / "iter-2", most, fmt=0, submit=True)
    (run / "times").mkdir()
    (run / "async" / "times").mkdir()
    for stage, s in [("rollouts-0", 10), ("dapo-0", 20), ("rollouts-1", 30), ("dapo-1", 40), ("eval-1", 500)]:
        (run / "times" / f"{stage}.json").write_text(json.dumps({"stage": stage, "wall_s": s, "start": 0, "end": 0}))
    (run / "async" / "times" / "async-rl.json").write_text(json.dumps({"wall_s": 77, "start": 0, "end": 0}))
    for k, (ages, dropped) in enumerate([([0, 0], 0), ([3, 1], 2)]):
        (run / "async" / f"iter-{k}").mkdir(parents=True, exist_ok=True)
        summary = {
            "steps": 3,
            "counts": {"groups": 2, "groups_dropped": 1},
            "config": {"loss": "tis"},
            "staleness": {"groups": ages, "mean": sum(ages) / 2, "max": max(ages), "k": 4},
            "follow": {"update": k, "dropped_stale_groups": dropped},
        }
        (run / "async" / f"iter-{k}" / "dapo.json").write_text(json.dumps(summary))
    script = str(ROOT / "scripts" / "paper_mini_async.py")
    proc = subprocess.run([sys.executable, script, str(run)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    c = json.loads((run / "async" / "compare.json").read_text())
    assert (c["sync"]["pass1"], c["async"]["pass1"]) == (0.5, 14 / 16)
    assert (c["sync"]["updates"], c["async"]["updates"]) == (2, 2)
    assert (c["sync"]["rl_wall_s"], c["async"]["rl_wall_s"]) == (100, 77)  # sync: rollouts + updates, no evals
    assert 2 < c["z_async_vs_sync"] < 3
    assert c["within_2se"] is True
    assert [u["staleness_max"] for u in c["per_update"]] == [0, 3]
    assert [u["groups"] for u in c["per_update"]] == [2, 2]
    assert c["per_update"][1]["dropped_stale_groups_total"] == 2
    assert "| async (K = 4, loss tis) | 2 | 0.875 ± 0.085 (16) |" in proc.stdout
    assert "Learning test (async not below sync by more than 2 SE): passed" in proc.stdout
    # the other way round: async 2.4 SE below sync fails the check
    sync_ev, async_ev = (run / "iter-2" / "eval.json").read_text(), (run / "async" / "iter-2" / "eval.json").read_text()
    (run / "iter-2" / "eval.json").write_text(async_ev)
    (run / "async" / "iter-2" / "eval.json").write_text(sync_ev)
    proc = subprocess.run([sys.executable, script, str(run)], capture_output=True, text=True, timeout=60)
    assert "FAILED (-2.4 SE)" in proc.stdout, proc.stdout
    missing = subprocess.run([sys.executable, script, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert (missing.returncode, missing.stderr.count("\n")) == (3, 1)
    assert "no evaluated DAPO" in missing.stderr


def test_async_dry_run_runs_make_rl_async_from_the_rft_checkpoint(tmp_path: Path):
    """make paper-mini-async: the async loop on the same pool and settings from RUN/rft/ckpt into RUN/async, with K =
    the optimizer steps of one update (16 tasks x G 4 / batch 16 = 4), then the same held-out eval and the verdict."""
    run = tmp_path / "pm"
    (run / "iter-2").mkdir(parents=True)
    (run / "iter-2" / "eval.json").write_text("{}")  # the sync run has been made
    out = _dry_run("paper-mini-async", run)
    assert f"MODEL={run}/rft/ckpt TASKS={run}/train.jsonl" in out
    assert f"RUNS={run}/async VLLM_STATE={run}/async/vllm" in out
    assert "ASYNC=1 STALENESS=4 ITERS=2 VLLM_KEEP=1 rl" in out
    assert "K=2 rl-eval-start" in out
    assert f"paper_mini_async.py {run}" in out
    assert out.index(" rl;") < out.index("rl-eval-start") < out.index("paper_mini_async.py")
