"""Collect overhead: share of episode wall time spent outside the policy (sandbox + scaffold).

A scripted policy with a fixed artificial latency per turn issues the same actions in every episode, on the example
tasks, in real containers. Episode wall time runs from the moment the episode is scheduled (sandbox start included)
to the moment its record is emitted (container removal runs in the background and is not part of an episode).
Concurrency 1 is the baseline measured in the same run. Collect's defaults are on: sandboxes for queued episodes
are started ahead (`--prefetch`), starts run a few at a time and removals in the background.

Two episode shapes:
- `paper`: 20 turns at 2 s each (a fast policy for 32 concurrent long-context requests; the paper's episodes run up
  to 40-80 turns of a 72B model), an action mix of shell commands, editor tools, python runs and a submit. The
  target, < 5% outside the policy at concurrency 32, is judged on this shape over three waves of episodes (the
  first wave includes the cold start of 32 containers at once; "after warm-up" leaves it out).
- `stress`: 5 turns at 0.5 s. Episodes are so short that container start and removal dominate: at concurrency 32
  the demand is ~13 episodes/s, and the CPU accounting printed below shows how many cores that would take.

CPU accounting: machine-wide busy CPU-seconds per episode (/proc/stat: engine, containers and swerl together) and
the swerl process's own share (the scaffold: asyncio loop, policy client, SDK calls).
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swerl_cli.collect import CollectConfig, collect_records
from swerl_cli.policy.base import Completion, EpisodeInfo, Sampling
from swerl_cli.streams.jsonl import read_records

TASKS = Path(__file__).resolve().parents[1] / "examples" / "tasks.jsonl"
SRC = "$(git ls-files '*.py' | grep -v test | head -1)"
PAPER_ACTIONS = [
    "ls -la",
    "find . -name '*.py' -not -path './.git/*' | head -20",
    f"open {SRC}",
    "scroll_down",
    f"search_file def {SRC}",
    "grep -rn 'import' --include='*.py' . | head -20",
    "goto 1",
    "create /tmp/repro.py",
    "edit 1:1 << 'EOF'\nimport sys\nprint('repro', sys.version_info[:2])\nEOF",
    "python3 /tmp/repro.py",
    "cat README* 2>/dev/null | head -20",
    "git status --short",
    "git log --oneline | head -5",
    f"open {SRC} 5",
    "edit 1:1 << 'EOF'\n# edited by the benchmark\nEOF",
    "python3 -c 'import sys; print(sys.version)'",
    "git diff --stat",
    "rm -f /tmp/repro.py",
    "scroll_up",
    "submit",
]
STRESS_ACTIONS = [
    "ls -la",
    f"open {SRC} 5",
    "edit 1:1 << 'EOF'\n# edited by the benchmark\nEOF",
    "python3 -c 'import sys; print(sys.version)'",
    "submit",
]


@dataclass(frozen=True)
class Shape:
    """One episode shape: scripted actions, policy latency per turn, (concurrency, episodes) runs."""

    name: str
    latency_s: float
    actions: list[str]
    runs: tuple[tuple[int, int], ...]


SHAPES = (
    Shape("paper", 2.0, PAPER_ACTIONS, ((1, 2), (8, 16), (32, 96))),
    Shape("stress", 0.5, STRESS_ACTIONS, ((1, 8), (32, 64))),
)


class ScriptedPolicy:
    """Sleeps `latency_s`, then returns the next scripted action."""

    name = "bench"

    def __init__(self, latency_s: float, actions: list[str]):
        self.latency_s, self.actions = latency_s, actions

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
        await asyncio.sleep(self.latency_s)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        return Completion(
            text=f"Step {turn}.\n```command\n{self.actions[turn]}\n```", token_ids=[], latency_s=self.latency_s
        )

    async def aclose(self) -> None:
        pass


def busy_cpu_s() -> float:
    """Machine-wide busy CPU-seconds since boot (everything but idle and iowait)."""
    with open("/proc/stat") as fh:
        ticks = [int(x) for x in fh.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """This process's CPU-seconds (every thread)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def measure(shape: Shape, concurrency: int, episodes: int) -> dict[str, float]:
    """Run `episodes` episodes of `shape` at `concurrency`; outside-policy share, rates and CPU per episode."""
    tasks = list(read_records(str(TASKS)))[:episodes]
    samples = -(-episodes // len(tasks))
    cfg = CollectConfig(
        policy="gold", samples=samples, concurrency=concurrency, run=f"bench-{shape.name}-c{concurrency}"
    )
    started: dict[tuple[str, int], tuple[int, float]] = {}
    wall: list[float] = []
    policy_s: list[float] = []
    warm: list[bool] = []  # started after the first `concurrency` episodes (no cold start of the whole pool)
    statuses: list[str] = []

    def on_event(kind: str, payload: Any) -> None:
        if kind == "start":
            started[payload] = (len(started), time.perf_counter())
        elif kind == "end":
            order, t0 = started[(payload["instance_id"], payload["sample"])]
            wall.append(time.perf_counter() - t0)
            policy_s.append(payload["stats"]["policy_s"])
            warm.append(order >= concurrency)
            statuses.append(payload["exit_status"])

    cpu0, own0, t0 = busy_cpu_s(), own_cpu_s(), time.perf_counter()
    policy = ScriptedPolicy(shape.latency_s, shape.actions)
    collect_records(tasks, cfg, lambda r: None, on_event=on_event, policy=policy)
    elapsed = time.perf_counter() - t0
    n = len(wall)
    return {
        "episodes": n,
        "submitted": statuses.count("submitted"),
        "outside": 1.0 - sum(policy_s) / sum(wall),
        "outside_warm": 1.0 - _total(policy_s, warm) / _total(wall, warm) if any(warm) else float("nan"),
        "episode_s": sum(wall) / n,
        "per_min": n / elapsed * 60,
        "cpu_per_episode": (busy_cpu_s() - cpu0) / n,
        "scaffold_cpu_per_episode": (own_cpu_s() - own0) / n,
    }


def _total(values: list[float], keep: list[bool]) -> float:
    return sum(v for v, k in zip(values, keep, strict=True) if k)


def report(shape: Shape) -> float:
    """Print one shape's table; return its outside-policy share at the highest concurrency."""
    floor = shape.latency_s * len(shape.actions)
    print(
        f"\nshape {shape.name!r}: {len(shape.actions)} turns x {shape.latency_s} s policy latency "
        f"(policy-only floor {floor:.1f} s per episode)"
    )
    print(
        f"{'conc':>5} {'episodes':>9} {'submitted':>9} {'outside policy':>15} {'after warm-up':>14} {'episode s':>10} "
        f"{'episodes/min':>13} {'vs conc 1':>10} {'CPU-s/ep':>9} {'swerl CPU-s/ep':>15} {'cores needed':>13}"
    )
    rows = [(c, measure(shape, c, n)) for c, n in shape.runs]
    base = rows[0][1]["per_min"]
    for c, r in rows:
        # Cores the shape would need at this concurrency if nothing waited: demanded episodes/s x CPU per episode.
        need = c / floor * r["cpu_per_episode"]
        print(
            f"{c:>5} {r['episodes']:>9} {r['submitted']:>9} {r['outside'] * 100:>14.1f}% "
            f"{r['outside_warm'] * 100:>13.1f}% {r['episode_s']:>10.2f} "
            f"{r['per_min']:>13.1f} {r['per_min'] / base:>9.1f}x {r['cpu_per_episode']:>9.3f} "
            f"{r['scaffold_cpu_per_episode']:>15.3f} {need:>13.1f}"
        )
    return rows[-1][1]["outside"]


def main() -> None:
    """Print both shapes' tables and the verdict on the target (paper shape, concurrency 32)."""
    print(f"machine: {os.cpu_count()} cores; baseline: concurrency 1 of the same shape, same run")
    outside = {shape.name: report(shape) for shape in SHAPES}
    verdict = "met" if outside["paper"] < 0.05 else "NOT met"
    share = outside["paper"] * 100
    print(f"\ntarget < 5% outside the policy at concurrency 32 (paper shape): {verdict} ({share:.1f}%)")


if __name__ == "__main__":
    main()
