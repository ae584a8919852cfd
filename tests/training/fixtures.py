"""Trajectory fixtures in the swerl.trajectory/1 schema, with token ids produced by the tiny tokenizer."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson


def make_trajectory(
    tok: Any, index: int, n_turns: int = 3, format_error_turns: tuple[int, ...] = (), seed: int = 0
) -> dict[str, Any]:
    """One multi-turn episode whose token ids follow the turns contract (prompt ++ tokens ++ delta ++ tokens ...)."""
    rng = random.Random(seed * 1000 + index)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a software engineering agent. Reply with one ```command block."},
        {"role": "user", "content": f"# ISSUE DESCRIPTION\nTask {index}: parse() fails on empty input."},
    ]
    prompt = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, return_dict=True)
    turns = []
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    for k in range(n_turns):
        cmd = rng.choice(["ls -la", "grep -rn parse src/", "python -m pytest -q", "cat src/utils.py", "submit"])
        content = f"Step {k}: let me check.\n```command\n{cmd}\n```"
        ids = tok.encode(content, add_special_tokens=False) + [eos]
        turn: dict[str, Any] = {
            "message_index": len(messages),
            "prompt_token_ids": list(prompt["input_ids"]) if k == 0 else None,
            "delta_token_ids": None,
            "token_ids": ids,
            "logprobs": [round(-rng.random() * 3, 4) for _ in ids],
            "finish_reason": "stop",
            "format_error": k in format_error_turns,
            "prefix_ok": True,
            "n_prompt_tokens": 0,
            "latency_s": 0.01,
        }
        messages.append({"role": "assistant", "content": content})
        turns.append(turn)
        if k < n_turns - 1:
            obs = f"output of {cmd} (line {rng.randint(1, 99)})\n(Current directory: /project) bash-$"
            messages.append({"role": "user", "content": obs})
    for k in range(1, n_turns):
        obs_msg = messages[turns[k]["message_index"] - 1]
        glue = f"\n<|im_start|>user\n{obs_msg['content']}<|im_end|>\n<|im_start|>assistant\n"
        turns[k]["delta_token_ids"] = tok.encode(glue, add_special_tokens=False)
    return {
        "schema": "swerl.trajectory/1",
        "id": f"task-{index}/run0/0",
        "instance_id": f"task-{index}",
        "run": "run0",
        "sample": 0,
        "messages": messages,
        "turns": turns,
        "patch": "",
        "exit_status": "submitted",
        "error": None,
        "stats": {"turns": n_turns, "format_errors": len(format_error_turns)},
    }


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    """Write records as JSONL and return the path."""
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def launch_swerl(args: list[str], nproc: int) -> subprocess.CompletedProcess[bytes]:
    """`swerl ARGS` in a fresh process, under torch.distributed.run with `nproc` ranks when nproc > 1 (the
    test process's own rank variables removed); asserts exit 0."""
    from swerl_cli.training.dist import free_port

    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT")}
    launch = [sys.executable, "-m", "swerl_cli"]
    if nproc > 1:
        launch = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc)]
        launch += ["--master_port", str(free_port()), "-m", "swerl_cli"]
    proc = subprocess.run([*launch, *args], capture_output=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return proc
