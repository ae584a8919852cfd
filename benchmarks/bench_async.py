"""Synchronous vs asynchronous RL to N optimizer steps on one workload: real containers, real updates of the tiny
model, weights pushed into a stand-in policy server whose episodes are long-tailed in turns
(tests/agent/standin_server.py).

    workload: a pool of P tasks (copies of the toy task, each its own prompt, so each its own turn counts), G samples
              each; one update = P groups = P * G episodes, one optimizer step (batch = P * G)
    sync:     N times: collect the pool (--policy-version server, all P * G episodes at once) | grade -> swerl dapo
              -> reload (the paper's loop: every update waits for the slowest episode of its batch)
    async:    `make rl ASYNC=1`'s own collector (scripts/rl-async.sh: passes over the pool, K ahead of the
              trainer (one optimizer step per update here) and K + 1 at once, one graded file each) beside
              `swerl dapo --follow --max-staleness K --groups-per-update P`, which pushes each checkpoint (drained,
              probe-checked)

The stand-in serves any number of requests at the same latency per turn (a server below saturation, as a GPU
engine is at this concurrency), so neither side is throttled by the sampler. Reported: wall-clock to N steps and
its speed-up; seconds per update after the first (when each update's weights are live on the server; the async
pipeline is full from there on, as it is for most of a real run) and that speed-up; the sampler's idle share (time
the server had no request in flight); the staleness the async updates trained at and the groups they dropped as
too stale. Environment: BENCH_ASYNC_N (updates, 8), BENCH_ASYNC_P (groups per update, 4), BENCH_ASYNC_G (4),
BENCH_ASYNC_K ("1,2"), BENCH_ASYNC_LATENCY (s per turn, 3.0: a large model's decode, so that rollouts, not this
machine's CPU, dominate the sampler's time as they do on GPUs), BENCH_ASYNC_TMAX (20).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench-out" / "async"
TASKS = ROOT / "examples" / "toy-tasks.jsonl"
SWERL = f"{sys.executable} -m swerl_cli"


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


N, P, G = int(_env("BENCH_ASYNC_N", "8")), int(_env("BENCH_ASYNC_P", "4")), int(_env("BENCH_ASYNC_G", "4"))
KS = [int(k) for k in _env("BENCH_ASYNC_K", "1,2").split(",")]
LATENCY, T_MAX = float(_env("BENCH_ASYNC_LATENCY", "3.0")), int(_env("BENCH_ASYNC_TMAX", "20"))
CONTEXT = 32768  # the tiny model's positions; both sides pass it
DAPO = f"--group-size {G} --t-max {T_MAX} --l-thr 4 --batch-size {P * G} --lr 1e-3 --micro-batch-tokens 8192 --rerender"


def _pool(work: Path) -> Path:
    """P tasks: the toy task under P ids, each statement marked with its copy (its own prompt, its own episodes)."""
    task = json.loads(TASKS.read_text().splitlines()[0])
    rows = []
    for k in range(P):
        row = dict(task, instance_id=f"{task['instance_id']}-copy{k}")
        row["problem_statement"] = f"{task['problem_statement']}(Task copy {k}.)\n"
        rows.append(json.dumps(row))
    (pool := work / "pool.jsonl").write_text("\n".join(rows) + "\n")
    return pool


def _sync(server: Any, model: Path, work: Path, pool: Path) -> dict[str, Any]:
    from swerl_cli.policy.refresh import reload

    url, cur = server.base_url.removesuffix("/v1"), str(model)
    t0 = time.perf_counter()
    server.reset_busy()
    done = []  # seconds from the start at which each update's weights were live on the server
    for n in range(N):
        graded, nxt = work / f"graded-{n}.jsonl", work / f"ckpt-{n + 1}"
        collect = (
            f"{SWERL} collect --policy openai --model swerl-policy --policy-version server --base-url {url}/v1 "
            f"--samples {G} --run sync-{n} --max-turns {T_MAX} --max-context-tokens {CONTEXT} --max-new-tokens 64 "
            f"--concurrency {P * G} --seed {100000 + n * 1000} {pool} | {SWERL} grade --workers {P * G}"
        )
        subprocess.run(f"{collect} > {graded}", shell=True, check=True)
        cmd = f"{SWERL} dapo {graded} --model {cur} --output {nxt} --loss dapo {DAPO} > {work / f'dapo-{n}.json'}"
        subprocess.run(cmd, shell=True, check=True, stderr=subprocess.DEVNULL)
        reload(url, str(nxt))
        cur = str(nxt)
        done.append(time.perf_counter() - t0)
    wall = time.perf_counter() - t0
    return {
        "mode": "sync", "K": 0, "wall_s": wall, "idle_share": 1.0 - server.busy_s / wall, "staleness_max": 0,
        "update_s": done,
    }  # fmt: skip


def _async(server: Any, model: Path, work: Path, pool: Path, k: int) -> dict[str, Any]:
    from swerl_cli.policy.refresh import reload

    url = server.base_url.removesuffix("/v1")
    reload(url, str(model))
    runs = work / "run"  # make rl ASYNC's layout: runs/stream/async-r.jsonl, runs/collected/, runs/follow_state.json
    (runs / "stream").mkdir(parents=True)
    env = os.environ | {
        "RUNS": str(runs), "URL": url, "POOL": str(pool), "G": str(G), "POOL_GROUPS": str(P), "SEED": "1",
        "MAX_TURNS": str(T_MAX), "CONTEXT": str(CONTEXT), "MAX_NEW_TOKENS": "64", "CONCURRENCY": str(P * G),
        "STALENESS": str(k), "SWERL": SWERL,
    }  # fmt: skip
    collector = subprocess.Popen(
        ["bash", str(ROOT / "scripts" / "rl-async.sh"), "collector", "0", str(3 * N + 2)],
        env=env, cwd=ROOT, start_new_session=True, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    t0 = time.perf_counter()
    server.reset_busy()
    done = []  # as in _sync: when each update's summary line came out (it is printed after the push)
    try:
        cmd = f"{SWERL} dapo --follow {runs / 'stream'} --model {model} --output {runs} --push {url}"
        cmd += f" --max-staleness {k} --groups-per-update {P} --max-updates {N} --loss tis {DAPO}"
        with subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as follow:
            assert follow.stdout is not None
            with (work / "follow.jsonl").open("wb") as out:
                for line in follow.stdout:
                    done.append(time.perf_counter() - t0)
                    out.write(line)
        if follow.returncode != 0:
            raise RuntimeError(f"dapo --follow exited {follow.returncode}")
        wall = time.perf_counter() - t0
    finally:
        os.killpg(collector.pid, 15)
        collector.wait()
    summaries = [json.loads(x) for x in (work / "follow.jsonl").read_text().splitlines()]
    stale = [s["staleness"]["max"] for s in summaries]
    dropped = summaries[-1]["follow"]["dropped_stale_groups"] if summaries else 0
    return {
        "mode": "async", "K": k, "wall_s": wall, "idle_share": 1.0 - server.busy_s / wall,
        "staleness_max": max(stale, default=0), "dropped_groups": dropped, "update_s": done,
    }  # fmt: skip


def main() -> None:
    from tests.agent.standin_server import StandInServer

    from swerl_cli.training.tiny import build_tiny_model

    image = json.loads(TASKS.read_text().splitlines()[0])["image"]
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode != 0:
        raise SystemExit(f"bench async: toy image {image} missing: run `make example-images`")
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    model = build_tiny_model(OUT / "tiny", seed=0)
    pool = _pool(OUT)
    rows = []
    with StandInServer(str(model), t_max=T_MAX, latency_s=LATENCY) as server:
        (OUT / "sync").mkdir()
        rows.append(_sync(server, model, OUT / "sync", pool))
        for k in KS:
            (OUT / f"async-k{k}").mkdir()
            rows.append(_async(server, model, OUT / f"async-k{k}", pool, k))
        turns = sorted(server.turn_counts)
    base = rows[0]["wall_s"]
    for r in rows:  # after the first update (the pipeline is full from there on): seconds per further update
        u = r["update_s"]
        r["steady_s"] = (u[-1] - u[0]) / (len(u) - 1) if len(u) > 1 else float("nan")
    print(f"workload: {N} updates x {P} groups of G={G}, toy task in docker, {LATENCY}s/turn lognormal, ", end="")
    print(f"turns p50 {turns[len(turns) // 2]} p90 {turns[int(len(turns) * 0.9)]} max {turns[-1]} (t_max {T_MAX})")
    head = f"{'mode':<8}{'K':>3}{'wall s':>9}{'speed-up':>10}{'s/update after the 1st':>24}{'speed-up':>10}"
    print(f"{head}{'sampler idle':>14}{'staleness max':>15}{'dropped':>9}")
    for r in rows:
        print(
            f"{r['mode']:<8}{r['K']:>3}{r['wall_s']:>9.1f}{base / r['wall_s']:>9.2f}x{r['steady_s']:>24.1f}"
            f"{rows[0]['steady_s'] / r['steady_s']:>9.2f}x{r['idle_share']:>13.0%}{r['staleness_max']:>15}"
            f"{r.get('dropped_groups', 0):>9}"
        )
    print("speed-up: wall-clock to N updates (pipeline fill included), then seconds per update once the first is done")
    (OUT / "results.json").write_text(json.dumps({"rows": rows, "turns": turns}, indent=1))
