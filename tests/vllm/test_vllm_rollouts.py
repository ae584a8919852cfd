"""Token-in/token-out rollouts on the real vLLM engine: the OpenAI server (token-id prompts to /v1/completions)
and the offline AsyncLLM engine. `collect | grade | dapo` with no flag runs twice in tests/vllm/test_rl_loop.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from swerl_cli.policy.tokens import rebuild_sequence
from tests.conftest import EXAMPLES, run_swerl
from tests.vllm.conftest import VLLM_ENV

pytestmark = pytest.mark.docker
TASKS = EXAMPLES / "tasks.jsonl"


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def trainer_logprobs(model: Path, ids: list[int]) -> list[float]:
    import torch
    from transformers import AutoModelForCausalLM

    m = AutoModelForCausalLM.from_pretrained(str(model), dtype=torch.float32).eval()
    with torch.no_grad():
        lps = torch.log_softmax(m(torch.tensor([ids])).logits[0, :-1].float(), dim=-1)
    return [float(lps[i, t]) for i, t in enumerate(ids[1:])]


def check_token_exact(model: Path, recs: list[dict]) -> None:
    """Every turn prefix-preserving, ids and logprobs aligned, first-turn sampler/trainer gap below 1e-4."""
    assert recs
    for r in recs:
        assert r["exit_status"] != "error", r["error"]
        turns = r["turns"]
        assert len(turns) >= 2  # later turns exist, so the token-in/token-out path ran
        assert all(t["prefix_ok"] for t in turns)
        assert all(t["logprobs"] is not None and len(t["logprobs"]) == len(t["token_ids"]) for t in turns)
        assert all(t["delta_token_ids"] and t["prompt_token_ids"] is None for t in turns[1:])
        seq = rebuild_sequence(turns)  # the training sequence: no re-tokenisation anywhere
        assert len(seq) == turns[-1]["n_prompt_tokens"] + len(turns[-1]["token_ids"])
        first = turns[0]
        n = len(first["prompt_token_ids"])
        trainer = trainer_logprobs(model, first["prompt_token_ids"] + first["token_ids"])[n - 1 :]
        gap = max(abs(a - b) for a, b in zip(trainer, first["logprobs"], strict=True))
        assert gap < 1e-4, gap


def one_task(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(TASKS.read_text().splitlines(keepends=True)[0])
    return tasks


def test_openai_backend_sends_token_id_prompts_to_vllm(vllm_server, tmp_path):
    out = tmp_path / "traj.jsonl"
    res = run_swerl(
        "collect", str(one_task(tmp_path)), "--policy", "openai", "--model", "swerl-policy",
        "--base-url", f"{vllm_server.url}/v1",
        "--samples", "2", "--max-turns", "3", "--max-new-tokens", "24", "--run", "i13-vllm-openai", "--seed", "3",
        "-o", str(out),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    recs = records(out)
    assert len(recs) == 2
    assert all(r["policy"]["token_prompts"] is True for r in recs)
    check_token_exact(vllm_server.model, recs)
    # Turns were cut by --max-new-tokens; the next turn's delta starts with the template's closing tokens, which
    # were added (not sampled): <|im_end|> and the newline after it.
    assert any(t["finish_reason"] == "length" for r in recs for t in r["turns"][:-1])
    for r in recs:
        for a, b in zip(r["turns"], r["turns"][1:], strict=False):
            if a["finish_reason"] == "length":
                assert b["n_closing_tokens"] == 2


@pytest.fixture(scope="module")
def offline_run(vllm_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One `collect --policy vllm` (one in-process engine start, eager mode) for the offline-engine tests: the
    first example task and a copy whose issue makes a seeded prompt of ~5,000 tokens, 2 samples each; its stderr
    and the wait-time file (an earlier start on this machine "took 99 s") for the announcement test.

    The long prompt: on vLLM's CPU backend a prefill split over steps (a prompt beyond the 4,096-token default
    budget) rewinds the request's seeded generator with set_offset, which a CPU generator lacks: the engine core
    died ("CPU Generator does not use offset") and every episode became an error record (found by the collect_vllm
    bench on a quiet machine). swerl now asks the CPU engine for whole prefills."""
    d = tmp_path_factory.mktemp("vllm-offline")
    row = json.loads(TASKS.read_text().splitlines()[0])
    long = {**row, "instance_id": f"{row['instance_id']}-long"}
    long["problem_statement"] += "\n" + " the" * 3500  # the tiny tokenizer: one token each
    tasks = d / "tasks.jsonl"
    tasks.write_text(json.dumps(row) + "\n" + json.dumps(long) + "\n")
    cfg = d / "collect.yaml"
    cfg.write_text("vllm_engine_args:\n  dtype: float32\n  enforce_eager: true\n")
    out, waits = d / "traj.jsonl", d / "waits.json"
    waits.write_text(json.dumps({f"vllm:{vllm_model.resolve()}": 99.0}))
    res = run_swerl(
        "collect", str(tasks), "--policy", "vllm", "--model", str(vllm_model), "--config", str(cfg),
        "--samples", "2", "--max-turns", "3", "--max-new-tokens", "24", "--max-context-tokens", "8192",
        "--run", "i13-vllm-offline", "--seed", "7", "-o", str(out), env={**VLLM_ENV, "SWERL_WAITS": str(waits)},
        timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    recs = records(out)
    assert all(r["policy"]["backend"] == "vllm" for r in recs)
    return {
        "short": [r for r in recs if r["instance_id"] == row["instance_id"]],
        "long": [r for r in recs if r["instance_id"] == long["instance_id"]],
        "err": res.stderr.decode(),
        "waits": waits,
        "model": str(vllm_model.resolve()),
    }


def test_offline_vllm_engine_collects_token_exact_turns(vllm_model, offline_run):
    assert len(offline_run["short"]) == 2
    check_token_exact(vllm_model, offline_run["short"])


def test_offline_engine_survives_a_seeded_prompt_longer_than_the_cpu_batch_budget(offline_run):
    assert len(offline_run["long"]) == 2
    for rec in offline_run["long"]:
        assert rec["exit_status"] != "error", rec["error"]
        assert rec["turns"][0]["n_prompt_tokens"] > 4096
        assert rec["policy"]["engine_args"]["enable_chunked_prefill"] is False


def test_collect_vllm_announces_the_engine_start_with_elapsed_time_and_estimate(offline_run):
    """Issue 43: long waits are not silent. The engine start (minutes on a CPU) says what starts, the elapsed time
    every 15 s with an estimate from the last start, and its total, which becomes the next estimate."""
    err, model = offline_run["err"], offline_run["model"]
    what = f"swerl vllm: starting the engine for {model}"
    assert f"{what} (this can take minutes on a CPU; last time 99 s)" in err
    took = re.search(rf"{re.escape(what)}: done in (\d+) s", err)
    assert took, err[-3000:]
    if int(took.group(1)) >= 16:  # a start that took longer than the beat said how long it had waited
        assert re.search(rf"{re.escape(what)}: 15 s, about \d+ s left", err), err[-3000:]
    assert json.loads(offline_run["waits"].read_text())[f"vllm:{model}"] == pytest.approx(int(took.group(1)), abs=1)
