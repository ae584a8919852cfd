"""Collect overhead: share of episode wall time spent outside the policy (sandbox + scaffold).

A scripted policy with a fixed artificial latency (0.5 s per turn) issues the same five actions in every episode
(ls, open, edit, run python, submit) on the example tasks, in real containers. Episode wall time runs from the
moment the episode is scheduled (sandbox start included) to the moment its sandbox is removed. Concurrency 1 is
the baseline measured in the same run; the target is < 5% outside the policy at concurrency 32.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from swerl_cli.collect import CollectConfig, collect_records
from swerl_cli.jsonl import read_records
from swerl_cli.policy.base import Completion, EpisodeInfo, Sampling

TASKS = Path(__file__).resolve().parents[1] / "examples" / "tasks.jsonl"
LATENCY_S = 0.5
ACTIONS = [
    "ls -la",
    "open $(git ls-files '*.py' | grep -v test | head -1) 5",
    "edit 1:1 << 'EOF'\n# edited by the benchmark\nEOF",
    "python3 -c 'import sys; print(sys.version)'",
    "submit",
]


class SleepyPolicy:
    """Sleeps LATENCY_S, then returns the next scripted action."""

    name = "bench"

    def describe(self) -> dict[str, Any]:
        return {"backend": "bench", "model": "scripted", "version": "0"}

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        sampling: Sampling,
        *,
        tools: Any = None,
        episode: EpisodeInfo | None = None,
    ) -> Completion:
        await asyncio.sleep(LATENCY_S)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        return Completion(text=f"Step {turn}.\n```command\n{ACTIONS[turn]}\n```", token_ids=[], latency_s=LATENCY_S)

    async def aclose(self) -> None:
        pass


def measure(concurrency: int, episodes: int) -> dict[str, float]:
    """Run `episodes` episodes at `concurrency`; return the outside-policy share and episodes per minute."""
    tasks = list(read_records(str(TASKS)))
    samples = -(-episodes // len(tasks))
    cfg = CollectConfig(policy="gold", samples=samples, concurrency=concurrency, run=f"bench-c{concurrency}")
    started: dict[tuple[str, int], float] = {}
    wall: list[float] = []
    policy_s: list[float] = []
    statuses: list[str] = []

    def on_event(kind: str, payload: Any) -> None:
        if kind == "start":
            started[payload] = time.perf_counter()
        elif kind == "end":
            wall.append(time.perf_counter() - started[(payload["instance_id"], payload["sample"])])
            policy_s.append(payload["stats"]["policy_s"])
            statuses.append(payload["exit_status"])

    t0 = time.perf_counter()
    collect_records(tasks, cfg, lambda r: None, on_event=on_event, policy=SleepyPolicy())
    elapsed = time.perf_counter() - t0
    outside = 1.0 - sum(policy_s) / sum(wall)
    return {
        "episodes": len(wall),
        "submitted": statuses.count("submitted"),
        "outside": outside,
        "episode_s": sum(wall) / len(wall),
        "per_min": len(wall) / elapsed * 60,
    }


def main() -> None:
    """Print the table: concurrency, episodes, share outside the policy, mean episode time, episodes/min."""
    rows = [(c, measure(c, n)) for c, n in ((1, 8), (8, 32), (32, 64))]
    base = rows[0][1]
    print(
        f"scripted policy: {LATENCY_S} s per turn, {len(ACTIONS)} turns per episode (policy-only floor "
        f"{LATENCY_S * len(ACTIONS):.1f} s)"
    )
    print(
        f"{'conc':>5} {'episodes':>9} {'submitted':>9} {'outside policy':>15} {'episode s':>10} "
        f"{'episodes/min':>13} {'vs conc 1':>10}"
    )
    for c, r in rows:
        print(
            f"{c:>5} {r['episodes']:>9} {r['submitted']:>9} {r['outside'] * 100:>14.1f}% {r['episode_s']:>10.2f} "
            f"{r['per_min']:>13.1f} {r['per_min'] / base['per_min']:>9.1f}x"
        )
    verdict = "met" if rows[-1][1]["outside"] < 0.05 else "NOT met"
    print(f"target < 5% outside the policy at concurrency 32: {verdict}")


if __name__ == "__main__":
    main()
