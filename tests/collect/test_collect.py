"""`swerl collect` end to end: real containers, the real CLI, the OpenAI-compatible test server over the tiny model."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from swerl_cli.policy.tokens import rebuild_sequence
from tests.conftest import EXAMPLES, containers, run_swerl
from tests.records import read_jsonl

pytestmark = pytest.mark.docker
TASKS = EXAMPLES / "tasks.jsonl"
SCRIPT = [
    "Let me look around first.\n```command\nls\n```",
    "I add a comment to the first module.\n```command\nf=$(git ls-files '*.py' | grep -v test | head -1) && "
    'echo \'# touched\' >> "$f" && echo "$f"\n```',
    "Checklist done; submitting.\n```command\nsubmit\n```",
]


def some_tasks(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(TASKS.read_text().splitlines(keepends=True)[:n]))
    return path


def collect_from(server, tasks: str, out: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`swerl collect TASKS --policy openai --base-url <the test server> ARGS -o OUT`."""
    return collect(tasks, "--policy", "openai", "--base-url", server.base_url, *args, "-o", str(out))


def collect(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[bytes]:
    return run_swerl("collect", *args, timeout=timeout)


def test_openai_collect_records_token_exact_turns(server, tiny_model, tmp_path):
    from transformers import AutoTokenizer

    server.script = SCRIPT
    out = tmp_path / "traj.jsonl"
    tasks = str(some_tasks(tmp_path, 2))
    res = collect_from(server, tasks, out, *"--model tiny --samples 2 --concurrency 4 --max-turns 5 --run tok".split())
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    recs = read_jsonl(out)
    assert sorted(r["id"] for r in recs) == sorted(
        f"{i}/tok/{s}" for i in {r["instance_id"] for r in recs} for s in (0, 1)
    )
    tok = AutoTokenizer.from_pretrained(tiny_model)
    for r in recs:
        assert r["exit_status"] == "submitted", r["error"]
        assert r["stats"]["turns"] == 3
        assert "# touched" in r["patch"]
        assert r["policy"]["sampling"] == {
            "temperature": 1.0,
            "top_p": 1.0,
            "top_k": -1,
            "min_p": 0.0,
            "repetition_penalty": 1.0,
            "max_new_tokens": 4096,
            "seed": None,
        }
        assert r["policy"]["biased_sampling"] is False
        turns = r["turns"]
        assert all(t["prefix_ok"] for t in turns)
        assert [t["message_index"] for t in turns] == [2, 4, 6]
        assert all(len(t["logprobs"]) == len(t["token_ids"]) for t in turns)
        assert all(t["token_ids"][-1] == tok.convert_tokens_to_ids("<|im_end|>") for t in turns)
        assert "(Current directory: /testbed, current file: n/a) bash-$" in r["messages"][3]["content"]
        # The documented training sequence equals a fresh tokenisation of the whole rendered conversation.
        fresh = tok.apply_chat_template(r["messages"], tokenize=True)
        fresh = list(fresh["input_ids"] if hasattr(fresh, "keys") else fresh)
        seq = rebuild_sequence(turns)
        assert fresh[: len(seq)] == seq
        assert tok.decode(fresh[len(seq) :]) == "\n"
        assert r["stats"]["tokens_total"] == len(seq)
    sent = server.requests[0]
    assert (sent["temperature"], sent["top_p"], sent["top_k"], sent["min_p"], sent["repetition_penalty"]) == (
        1.0,
        1.0,
        -1,
        0.0,
        1.0,
    )
    assert sent["return_token_ids"] is True

    # Replay re-plays the recorded actions and reproduces every patch byte for byte.
    replayed = tmp_path / "replay.jsonl"
    res = collect(
        tasks, "--policy", "replay", "--replay", str(out), *"--samples 2 --run tok".split(), "-o", str(replayed)
    )
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    by_id = {r["id"]: r["patch"] for r in recs}
    again = read_jsonl(replayed)
    assert len(again) == 4
    assert all(r["patch"] == by_id[r["id"]] for r in again)


def test_format_errors_end_the_episode_and_max_turns_keeps_the_diff(server, tmp_path):
    server.script = ["I think I should look around, but I forget the fence."]
    out = tmp_path / "fmt.jsonl"
    res = collect_from(server, str(some_tasks(tmp_path, 1)), out, "--max-format-errors", "2")
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    (r,) = read_jsonl(out)
    assert r["exit_status"] == "format_errors"
    assert [t["format_error"] for t in r["turns"]] == [True, True]
    assert r["messages"][3]["content"].startswith("Error: cannot extract command")
    server.script = [SCRIPT[1]]
    res = collect_from(server, str(some_tasks(tmp_path, 1)), out, "--max-turns", "2")
    (r,) = read_jsonl(out)
    assert (r["exit_status"], r["stats"]["turns"]) == ("max_turns", 2)
    assert r["patch"].count("+# touched") == 2


def test_context_limit_from_the_server_ends_the_episode(server, tmp_path):
    server.script = SCRIPT
    server.max_model_len = 300
    try:
        out = tmp_path / "ctx.jsonl"
        res = collect_from(server, str(some_tasks(tmp_path, 1)), out)
    finally:
        server.max_model_len = 8192
    assert res.returncode == 0
    assert read_jsonl(out)[0]["exit_status"] == "context_limit"


def test_server_errors_are_retried_then_recorded_and_the_run_goes_on(server, tmp_path):
    cfg = tmp_path / "collect.yaml"
    cfg.write_text("backoff_s: 0.01\nmax_retries: 2\nrequest_timeout_s: 1.0\n")
    server.script = SCRIPT
    server.hang_next, server.hang_s = 1, 3.0  # first request times out, the retry succeeds
    server.fail_next = [503]
    out = tmp_path / "retry.jsonl"
    res = collect_from(server, str(some_tasks(tmp_path, 1)), out, "-c", str(cfg))
    assert res.returncode == 0
    assert read_jsonl(out)[0]["exit_status"] == "submitted"
    server.fail_next = [500] * 3  # 3 attempts (1 + 2 retries) all fail: that episode is an error record
    res = collect_from(server, str(some_tasks(tmp_path, 2)), out, "-c", str(cfg), "--concurrency", "1")
    assert res.returncode == 0
    statuses = [r["exit_status"] for r in read_jsonl(out)]
    assert statuses == ["error", "submitted"]
    assert "HTTP 500" in read_jsonl(out)[0]["error"]


def test_gold_then_grade_resolves_every_example_task(tmp_path):
    out = tmp_path / "gold.jsonl"
    res = collect(str(TASKS), "--policy", "gold", "--concurrency", "4", "-o", str(out))
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    assert {r["exit_status"] for r in read_jsonl(out)} == {"submitted"}
    graded = run_swerl("grade", str(out), "--workers", "4", timeout=600)
    assert graded.returncode == 0, graded.stderr.decode()[-2000:]
    rows = [json.loads(line) for line in graded.stdout.decode().splitlines()]
    assert len(rows) == len(TASKS.read_text().splitlines())
    assert all(r["grade"]["resolved"] for r in rows), [r["grade"]["status"] for r in rows]


def test_tools_action_format_uses_tool_messages(tmp_path):
    out = tmp_path / "tools.jsonl"
    res = collect(str(some_tasks(tmp_path, 1)), "--policy", "gold", "--action-format", "tools", "-o", str(out))
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    (r,) = read_jsonl(out)
    assert (r["exit_status"], r["policy"]["action_format"]) == ("submitted", "tools")
    assert r["messages"][2]["tool_calls"][0]["function"]["name"] == "execute"
    assert r["messages"][3]["role"] == "tool"
    assert r["messages"][3]["tool_call_id"] == "call_0"


def test_sigint_mid_run_leaves_no_containers_and_resume_completes(server, tmp_path):
    server.script = ["Wait a bit.\n```command\nsleep 2\n```", "```command\nsubmit\n```"]
    tasks, out = some_tasks(tmp_path, 4), tmp_path / "int.jsonl"
    args = [
        sys.executable,
        "-m",
        "swerl_cli",
        "collect",
        str(tasks),
        "--policy",
        "openai",
        "--base-url",
        server.base_url,
        "--samples",
        "2",
        "--concurrency",
        "2",
        "--run",
        "sigint-test",
        "-o",
        str(out),
    ]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and (not out.exists() or not out.read_text().count("\n")):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err.decode()[-2000:]
    assert containers("swerl.run=sigint-test") == []
    done = read_jsonl(out)
    assert 1 <= len(done) < 8
    res = collect_from(
        server, str(tasks), out, "--samples", "2", "--concurrency", "4", "--run", "sigint-test", "--resume"
    )
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    ids = [r["id"] for r in read_jsonl(out)]
    assert len(ids) == len(set(ids)) == 8
    assert containers("swerl.run=sigint-test") == []


@pytest.mark.parametrize("prefetch", [0, 1])
def test_prefetch_starts_the_next_sandbox_while_an_episode_runs(tmp_path, monkeypatch, prefetch):
    from swerl_cli import collect as C
    from swerl_cli.streams.jsonl import read_records

    log: list[str] = []
    start = C.Collector._start

    def logged_start(self, task):
        log.append("start")
        return start(self, task)

    monkeypatch.setattr(C.Collector, "_start", logged_start)
    run = f"prefetch-test-{prefetch}"
    cfg = C.CollectConfig(policy="gold", samples=3, concurrency=1, prefetch=prefetch, run=run)
    out: list[dict] = []
    tasks = read_records(str(some_tasks(tmp_path, 1)))
    C.collect_records(tasks, cfg, out.append, on_event=lambda kind, _: log.append(kind) if kind == "end" else None)
    assert [r["exit_status"] for r in out] == ["submitted"] * 3
    if prefetch:  # the second sandbox is started before the first episode ends; never more than one ahead
        assert log[:3] == ["start", "start", "end"]
        assert log.count("start") == 3
    else:
        assert log == ["start", "end"] * 3
    assert containers(f"swerl.run={run}") == []


def test_a_sandbox_that_cannot_start_is_an_error_record_and_the_run_goes_on(tmp_path):
    lines = TASKS.read_text().splitlines()[:2]
    broken = json.loads(lines[0])
    broken["image"] = "swerl-no-such-image:never"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(broken) + "\n" + lines[1] + "\n")
    out = tmp_path / "out.jsonl"
    res = collect(str(tasks), "--policy", "gold", "--run", "broken-image", "-o", str(out))
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    by_instance = {r["instance_id"]: r for r in read_jsonl(out)}
    bad, good = by_instance[broken["instance_id"]], by_instance[json.loads(lines[1])["instance_id"]]
    assert bad["exit_status"] == "error"
    assert "swerl-no-such-image:never" in bad["error"]
    assert good["exit_status"] == "submitted"
    assert "1 error" in res.stderr.decode()
    assert containers("swerl.run=broken-image") == []
