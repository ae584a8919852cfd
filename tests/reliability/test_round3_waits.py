"""Issue 43: long waits are not silent. vLLM's engine start (minutes on a CPU) and the RL loop's self-started server
say what they wait for, the elapsed time, and an estimate where one is known; before, `make demo` showed only the
step header for minutes. The engine start's own announcement is checked on the tiny model's offline run in
tests/vllm/test_vllm_rollouts.py, which shares that engine start with the other offline-engine tests."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


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
