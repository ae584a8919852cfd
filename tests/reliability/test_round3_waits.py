"""Issue 43: long waits are not silent. vLLM's engine start (minutes on a CPU) and the RL loop's self-started server
say what they wait for, the elapsed time, and an estimate where one is known; before, `make demo` showed only the
step header for minutes."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT, run_swerl

VLLM_MODEL = ROOT / ".cache" / "tiny-model-vllm"  # `make setup`'s tiny model with a head size vLLM's CPU kernels take


@pytest.mark.vllm
@pytest.mark.docker
@pytest.mark.slow
def test_collect_vllm_announces_the_engine_start_with_elapsed_time_and_estimate(tmp_path: Path) -> None:
    if not (VLLM_MODEL / "config.json").exists():
        pytest.skip(f"{VLLM_MODEL} is missing (make setup builds it)")
    model = str(VLLM_MODEL.resolve())
    waits = tmp_path / "waits.json"
    waits.write_text(json.dumps({f"vllm:{model}": 99.0}))  # an earlier start on this machine took 99 s
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes((EXAMPLES / "tasks.jsonl").read_bytes().splitlines()[0] + b"\n")
    cfg = tmp_path / "collect.yaml"
    cfg.write_text("vllm_engine_args:\n  dtype: float32\n  enforce_eager: true\n")
    res = run_swerl(
        "collect", str(tasks), "--policy", "vllm", "--model", model, "--config", str(cfg), "--max-turns", "1",
        "--max-new-tokens", "8", "--max-context-tokens", "4096", "-o", str(tmp_path / "t.jsonl"),
        env={"SWERL_WAITS": str(waits), "VLLM_CPU_KVCACHE_SPACE": "1"}, timeout=900,
    )  # fmt: skip
    err = res.stderr.decode()
    assert res.returncode == 0, err[-3000:]
    what = f"swerl vllm: starting the engine for {model}"
    assert f"{what} (this can take minutes on a CPU; last time 99 s)" in err
    took = re.search(rf"{re.escape(what)}: done in (\d+) s", err)
    assert took, err[-3000:]
    if int(took.group(1)) >= 16:  # a start that took longer than the beat said how long it had waited
        assert re.search(rf"{re.escape(what)}: 15 s, about \d+ s left", err), err[-3000:]
    assert json.loads(waits.read_text())[f"vllm:{model}"] == pytest.approx(int(took.group(1)), abs=1)


def test_rl_vllm_script_says_what_the_server_is_doing_while_it_starts(tmp_path: Path) -> None:
    """The script polled /health for up to 900 s without a word."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    state, ckpt = tmp_path / "vllm", tmp_path / "ckpt-0"
    ckpt.mkdir()
    shutil.copy(ROOT / ".cache/tiny-model-vllm/config.json", ckpt / "config.json")
    slow = tmp_path / "slow-serve.sh"  # a stand-in server that loads for 16 s, saying so in its log
    fake = ROOT / "tests" / "infra" / "fake_vllm_server.py"
    slow.write_text(f'#!/bin/bash\necho "loading weights (stand-in)"\nsleep 16\nexec {sys.executable} {fake} "$@"\n')
    slow.chmod(0o755)
    env = {**os.environ, "PY": sys.executable, "VLLM_SERVE": str(slow), "VLLM_WAIT_S": "60"}
    script = str(ROOT / "scripts" / "rl-vllm.sh")
    try:
        res = subprocess.run(
            ["bash", script, "ensure", str(ckpt), port, str(state)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 0, res.stderr
        assert f"rl: starting vllm for {ckpt} on :{port} (minutes on a CPU; log: {state}/server.log)" in res.stderr
        assert "rl: vllm starting, 15s of at most 60s: loading weights (stand-in)" in res.stderr
        assert re.search(
            rf"rl: vllm serving {re.escape(str(ckpt))} on :{port} \(pid \d+, started in 1\d+s\)", res.stderr
        )
    finally:
        subprocess.run(["bash", script, "stop", "-", port, str(state)], env=env, capture_output=True, timeout=180)
