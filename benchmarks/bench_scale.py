"""Scale-out on Ray: what the cluster costs the driver per episode, against the local scheduler, in one run.

A two-node Ray cluster is started on this machine (tests/executor/cluster.py: `ray start --head` plus one worker node,
both on the local Docker engine) and torn down at the end.

1. Ray vs local, the same gold episodes on the example tasks (real containers), the same concurrency: the driver
   process's CPU per episode (getrusage of this process: the local scheduler's threads run the sandboxes here; with
   Ray, only submission, Ray's client threads, receiving and writing records) and the mean wall latency per
   episode (from the moment it is handed out to the moment its record is written).
2. Driver CPU per episode with 1,000 episodes queued on the cluster at once: each job is a scripted episode that
   waits a fixed time per turn (no sandbox, so the cluster's nodes are not the bottleneck) and returns a
   trajectory-sized record (turns with token ids and logprobs); the driver submits, receives and writes every
   record, as `collect --ray` does. Target: < 20 ms of driver CPU per episode (3,000 episodes per iteration).

Absolute numbers on a shared 2-core machine move a lot; the Ray-vs-local rows are measured back to back.
"""

from __future__ import annotations

import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from swerl_cli.collect import CollectConfig, build_policy, plan_jobs, run_jobs
from swerl_cli.collect.distributed import run_jobs_on
from swerl_cli.executor import Placement, stream_jobs
from swerl_cli.streams.jsonl import dumps, read_records

TASKS = Path(__file__).resolve().parents[1] / "examples" / "tasks.jsonl"
SAMPLES = int(os.environ.get("SWERL_BENCH_SCALE_SAMPLES", "2"))
CONCURRENCY = 4
QUEUED = int(os.environ.get("SWERL_BENCH_SCALE_QUEUED", "1000"))
TURNS, TURN_LATENCY_S, TOKENS_PER_TURN = 10, 0.2, 400


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class _Timer:
    """Collects per-episode latency from the collect events (start: handed out; end: record ready)."""

    def __init__(self) -> None:
        self.started: dict[tuple[str, int], float] = {}
        self.latencies: list[float] = []

    def event(self, kind: str, payload: Any) -> None:
        if kind == "start":
            self.started[payload] = time.perf_counter()
        elif kind == "end":
            t0 = self.started.pop((payload["instance_id"], payload["sample"]))
            self.latencies.append(time.perf_counter() - t0)


def _gold_run(executor: Any | None, run: str, out_path: Path) -> dict[str, float]:
    cfg = CollectConfig(policy="gold", samples=SAMPLES, concurrency=CONCURRENCY, run=run, episode_cpus=0.5)
    jobs = plan_jobs(read_records(str(TASKS)), cfg, set())
    timer = _Timer()
    with open(out_path, "wb") as fh:

        def emit(rec: dict[str, Any]) -> None:
            fh.write(dumps(rec))

        cpu0, t0 = _cpu_s(), time.perf_counter()
        if executor is None:
            run_jobs(jobs, cfg, emit, on_event=timer.event, policy=build_policy(cfg))
        else:
            run_jobs_on(executor, jobs, cfg, emit, policy=build_policy(cfg), on_event=timer.event)
        cpu, wall = _cpu_s() - cpu0, time.perf_counter() - t0
    n = len(timer.latencies)
    return {"n": n, "cpu_ms": 1000 * cpu / n, "lat_s": sum(timer.latencies) / n, "wall_s": wall}


def scripted_episode(turns: int, latency_s: float, tokens: int, seed: int) -> dict[str, Any]:
    """Runs on a worker: a scripted policy's episode with a fixed latency per turn and no sandbox."""
    turn_records, messages = [], []
    for k in range(turns):
        time.sleep(latency_s)
        ids = [(seed * 7919 + k * 104729 + i) % 151_000 for i in range(tokens)]
        turn_records.append({"token_ids": ids, "logprobs": [-0.001 * (i % 997) for i in range(tokens)]})
        messages.append({"role": "assistant", "content": f"turn {k}: " + "x" * 600})
    return {"id": f"bench/{seed}", "messages": messages, "turns": turn_records, "exit_status": "submitted"}


def _queued_run(executor: Any, out_path: Path) -> dict[str, float]:
    jobs = ((i, scripted_episode, (TURNS, TURN_LATENCY_S, TOKENS_PER_TURN, i)) for i in range(QUEUED))
    size = 0
    with open(out_path, "wb") as fh:
        cpu0, t0 = _cpu_s(), time.perf_counter()
        for _, outcome in stream_jobs(executor, jobs):
            line = dumps({**outcome.value, "node": outcome.node})
            size += len(line)
            fh.write(line)
        cpu, wall = _cpu_s() - cpu0, time.perf_counter() - t0
    return {"n": QUEUED, "cpu_ms": 1000 * cpu / QUEUED, "wall_s": wall, "record_kb": size / QUEUED / 1000}


def main() -> None:
    import ray
    from tests.executor.cluster import Cluster

    from swerl_cli.executor.ray import RayExecutor

    cluster = Cluster(cpus_per_node=2, memory_gb=8)
    t0 = time.perf_counter()
    cluster.start()
    os.environ["PYTHONPATH"] = cluster.env["PYTHONPATH"]
    print(f"two-node cluster up in {time.perf_counter() - t0:.0f} s at {cluster.address}")
    try:
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            n_eps = 8 * SAMPLES
            print(f"1. {n_eps} gold episodes (8 example tasks x {SAMPLES}), concurrency {CONCURRENCY}")
            warm = RayExecutor(cluster.address, CONCURRENCY, Placement(0.5, 1.0, 2))
            _gold_run(warm, "warm", out / "warm.jsonl")  # Ray starts its worker processes on first use
            rows = {}
            rows["local"] = _gold_run(None, "local", out / "local.jsonl")
            rows["ray"] = _gold_run(RayExecutor(cluster.address, CONCURRENCY, Placement(0.5, 1.0, 2)), "ray", out / "r")
            print(f"   {'':6} {'driver CPU/episode':>19} {'latency/episode':>16} {'wall':>8}")
            for name, r in rows.items():
                print(f"   {name:6} {r['cpu_ms']:16.1f} ms {r['lat_s']:14.2f} s {r['wall_s']:6.1f} s")
            lr, rr = rows["local"], rows["ray"]
            print(
                f"   Ray adds {rr['cpu_ms'] - lr['cpu_ms']:+.1f} ms driver CPU and {rr['lat_s'] - lr['lat_s']:+.2f} s "
                "latency per episode (negative CPU: the sandboxes' client work moved off the driver)"
            )
            print(
                f"2. {QUEUED} scripted episodes queued at once ({TURNS} turns x {TURN_LATENCY_S} s, "
                f"{TOKENS_PER_TURN} tokens/turn), 0.25 CPU each"
            )
            queued = _queued_run(RayExecutor(cluster.address, QUEUED, Placement(0.25, 0.1, 2)), out / "q.jsonl")
            verdict = "met" if queued["cpu_ms"] < 20 else "NOT met"
            print(
                f"   driver CPU {queued['cpu_ms']:.1f} ms per episode (target < 20 ms: {verdict}); "
                f"records {queued['record_kb']:.0f} KB; {queued['n'] / queued['wall_s'] * 60:.0f} episodes/min; "
                f"wall {queued['wall_s']:.1f} s"
            )
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.stop()


if __name__ == "__main__":
    main()
