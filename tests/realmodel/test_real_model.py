"""SmolLM2-135M-Instruct through every real-model joint, as a user runs them (default engine flags, real pipes).

One vLLM engine start for the pipeline and one server start are shared by all tests (tests/realmodel/conftest.py).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from swerl_cli.policy.engine_size import kv_cache_gib
from swerl_cli.policy.gap import first_turn_gaps, load_trainer
from swerl_cli.policy.tokens import rebuild_sequence
from tests.conftest import EXAMPLES, ROOT
from tests.realmodel.conftest import MAX_NEW, MAX_TURNS, PROMPTS, RUN, SWERL, clean_env

pytestmark = [pytest.mark.docker, pytest.mark.slow]
GAP_TOL = 1e-3  # fp32 sampler vs fp32 trainer: measured max 2e-5 (bf16 sampling: ~1e-1)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def check_turns(recs: list[dict]) -> None:
    """Token ids and logprobs aligned on every turn, every turn prefix-preserving, the sequence rebuildable."""
    for r in recs:
        assert r["exit_status"] != "error", r.get("error")
        turns = r["turns"]
        assert turns
        assert all(t["prefix_ok"] for t in turns)
        assert all(t["logprobs"] is not None and len(t["logprobs"]) == len(t["token_ids"]) for t in turns)
        seq = rebuild_sequence(turns)
        assert len(seq) == turns[-1]["n_prompt_tokens"] + len(turns[-1]["token_ids"])


@pytest.fixture(scope="module")
def trainer(real_model):
    """The real model as the trainer sees it (fp32 transformers), loaded once for every gap check."""
    return load_trainer(str(real_model))


def check_gap(model: object, recs: list[dict], backend: str) -> dict:
    (gap,) = first_turn_gaps(model, recs)
    assert gap["backend"] == backend
    assert gap["tokens"] > 0
    assert gap["max_abs"] < GAP_TOL, gap
    return gap


def test_vllm_collect_pipes_only_records_into_grade(vllm_pipe, real_model, trainer):
    # Everything collect wrote to stdout is a trajectory record, although the engine's processes printed log lines.
    lines = vllm_pipe.trajectories.read_text().splitlines()
    assert len(lines) == 2
    trajectories = [json.loads(line) for line in lines]
    assert all(t["schema"].startswith("swerl.trajectory/") for t in trajectories)
    assert "EngineCore" in vllm_pipe.collect_err  # the engine core's log lines went to stderr
    graded = records(vllm_pipe.graded)
    assert len(graded) == 2
    assert all("grade" in g for g in graded)
    assert "0 errors" in vllm_pipe.grade_err
    check_turns(graded)
    # Default flags: the sampler runs in the trainer's dtype (fp32 on CPU), with a KV cache sized for the run.
    policy = graded[0]["policy"]
    assert policy["engine_args"]["dtype"] == "float32"
    assert policy["engine_args"]["max_model_len"] == 8192
    assert policy["kv_cache_gib"] == kv_cache_gib(str(real_model), 8192, 4, "float32") == 2
    assert "KV cache 2 GiB" in vllm_pipe.collect_err
    check_gap(trainer, graded, "vllm")


def collect_into_grade(tmp_path: Path, *collect_args: str) -> list[dict]:
    """`swerl collect ARGS | swerl grade` through a real shell pipe, on one example task; the graded records (grade
    fails on any stdout line of collect that is not a record)."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text((EXAMPLES / "tasks.jsonl").read_text().splitlines(keepends=True)[0])
    args = " ".join(shlex.quote(a) for a in collect_args)
    graded = tmp_path / "graded.jsonl"
    cmd = (
        f"set -o pipefail; {SWERL} collect {tasks} {args} --prompt-config {PROMPTS} 2>{tmp_path}/collect.err "
        f"| {SWERL} grade > {graded} 2>{tmp_path}/grade.err"
    )
    res = subprocess.run(["bash", "-c", cmd], env=clean_env(), timeout=900)
    errs = (tmp_path / "collect.err").read_text()[-2000:] + (tmp_path / "grade.err").read_text()[-2000:]
    assert res.returncode == 0, errs
    recs = records(graded)
    assert all("grade" in r for r in recs), errs
    return recs


def test_openai_policy_sends_token_ids_to_the_real_server(real_server, trainer, tmp_path):
    recs = collect_into_grade(
        tmp_path, "--policy", "openai", "--model", "swerl-policy", "--base-url", f"{real_server.url}/v1",
        "--samples", "2", "--max-turns", str(MAX_TURNS), "--max-new-tokens", str(MAX_NEW), "--seed", "2",
        "--run", f"{RUN}-openai",
    )  # fmt: skip
    assert len(recs) == 2
    assert all(r["policy"]["token_prompts"] is True for r in recs)
    check_turns(recs)
    check_gap(trainer, recs, "openai")
    starts = (real_server.state / "starts.log").read_text()
    assert "kv_cache_gib=1" in starts
    assert "--dtype float32" in starts


def test_hf_policy_on_the_real_model(real_model, trainer, tmp_path):
    recs = collect_into_grade(
        tmp_path, "--policy", "hf", "--model", str(real_model), "--max-turns", str(MAX_TURNS), "--max-new-tokens",
        "12", "--seed", "3", "--run", f"{RUN}-hf",
    )  # fmt: skip
    assert len(recs) == 1
    assert len(recs[0]["turns"]) == MAX_TURNS  # a second turn, so prefix preservation is checked across turns
    assert recs[0]["policy"]["dtype"] == "float32"
    check_turns(recs)
    check_gap(trainer, recs, "hf")


def test_rft_and_dapo_steps_on_real_trajectories_then_reload(vllm_pipe, real_server, real_model, tmp_path):
    """One RFT step and one DAPO step on the pipeline's trajectories; the DAPO checkpoint is loaded into the
    running server in place and the reload probe passes. The three run in one process (tests/realmodel/
    one_process.py: the CLI's own entries, torch and DeepSpeed imported once).

    The real model resolves nothing here, so the group's rewards differ only through the step penalty: a third
    sample of the same group, collected through the server (same weights and version) with one turn, has no
    penalty under L_thr = 1, T_max = 2 while the pipeline's two-turn samples get -1."""
    third = tmp_path / "third.jsonl"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text((EXAMPLES / "tasks.jsonl").read_text().splitlines(keepends=True)[0])
    collect = subprocess.run(
        f"{sys.executable} -m swerl_cli collect {tasks} --policy openai --model swerl-policy "
        f"--policy-version {real_model} --base-url {real_server.url}/v1 --samples 3 --max-turns 1 "
        f"--max-new-tokens {MAX_NEW} --seed 1 --run {RUN} --prompt-config {PROMPTS} "
        f"| {sys.executable} -m swerl_cli filter --where "
        f"'sample == 2' | {sys.executable} -m swerl_cli grade > {third}",
        shell=True, capture_output=True, env=clean_env(), timeout=600,
    )  # fmt: skip
    assert collect.returncode == 0, collect.stderr.decode()[-2000:]
    group = tmp_path / "group.jsonl"
    group.write_text(vllm_pipe.graded.read_text() + third.read_text())
    rft, dapo = tmp_path / "rft", tmp_path / "dapo"
    commands = [
        ["rft", str(vllm_pipe.graded), "--model", str(real_model), "--output", str(rft), "--batch-size", "2",
         "--lr", "1e-6", "--max-steps", "1", "--train-format-errors"],
        ["dapo", str(group), "--model", str(real_model), "--output", str(dapo), "--group-size", "3", "--l-thr", "1",
         "--t-max", str(MAX_TURNS), "--batch-size", "3", "--lr", "1e-6"],
        ["refresh", "reload", real_server.url, str(dapo)],
    ]  # fmt: skip
    res = subprocess.run(
        [sys.executable, "-m", "tests.realmodel.one_process", json.dumps(commands)],
        capture_output=True, text=True, env=clean_env(), cwd=ROOT, timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    outputs = outputs_of(res.stdout)
    assert len(outputs) == 3, res.stdout[-2000:]
    assert json.loads(outputs[0][-1])["kind"] == "rft"
    assert (rft / "config.json").is_file()

    summary = json.loads(outputs[1][-1])
    assert summary["counts"]["samples_kept"] == 3
    diff = summary["logprob_diff"]
    assert diff is not None, summary  # the sampler-trainer gap, reported by the update
    assert diff < GAP_TOL, summary

    report = json.loads(outputs[2][-1])
    assert report["probe_ok"]
    assert report["gap_after"] < 1e-4


def outputs_of(stdout: str) -> list[list[str]]:
    """one_process.py's stdout split per command (each list ends before its `== exit 0` line)."""
    outputs: list[list[str]] = [[]]
    for line in stdout.splitlines():
        if line.startswith("== exit "):
            outputs.append([])
        elif line.strip():
            outputs[-1].append(line)
    return outputs[:-1]
