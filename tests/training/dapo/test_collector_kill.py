"""The asynchronous loop's collector side killed with SIGKILL at random moments and restarted: make rl ASYNC's real
collector (scripts/rl-async.sh: passes of `swerl collect | swerl grade` over the toy task in Docker, against a
stand-in policy server) runs beside `swerl dapo --follow` on its stream directory. Each kill hits the whole
collector, its `swerl collect` or its `swerl grade`; a killed grade's pass file also gets a torn last line (half a
record: what a kill in the middle of a write leaves). After the restarts: every pass's group is complete, no file
holds a torn or doubled line, and every graded record was trained in exactly one committed update."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT

pytestmark = [pytest.mark.train, pytest.mark.slow, pytest.mark.docker]

PASSES, G = 4, 3
SWERL = f"{sys.executable} -m swerl_cli"


def _group_pids(pgid: int) -> dict[int, str]:
    """pid -> command line of every process in the collector's process group (ours: it runs under setsid)."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if os.getpgid(int(d.name)) == pgid:
                found[int(d.name)] = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ProcessLookupError):
            continue
    return found


def _collector(env: dict[str, str]) -> subprocess.Popen:
    cmd = ["bash", str(ROOT / "scripts" / "rl-async.sh"), "collector", "0", str(PASSES - 1)]
    return subprocess.Popen(cmd, env=env, cwd=ROOT, start_new_session=True, stderr=subprocess.DEVNULL)


def _kill(proc: subprocess.Popen, target: str, runs: Path) -> str:
    """SIGKILL the target ('collector': the whole group; 'collect' / 'grade': that process), then the rest."""
    pids = _group_pids(proc.pid)
    hit = [p for p, cmd in pids.items() if f"swerl_cli {target} " in cmd] if target != "collector" else []
    for p in hit:
        os.kill(p, signal.SIGKILL)
    if hit and target == "grade":  # the torn line a kill in the middle of a write leaves, in the unfinished pass
        for f in (runs / "stream").glob("*.jsonl"):
            if f.stat().st_size and not (runs / "collected" / f"{f.stem}.done").exists():
                with f.open("ab") as fh:
                    fh.write(f.read_bytes().splitlines()[-1][:40])
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)  # the collector script and whatever it still ran
    proc.wait()
    return f"{target}{'' if hit or target == 'collector' else ' (not running)'}"


def _wait_for_writing_grade(proc: subprocess.Popen, runs: Path, timeout: float = 120.0) -> None:
    """Until a grade of the collector runs and its unfinished pass file already holds a record."""
    end = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < end:
        grading = any("swerl_cli grade " in cmd for cmd in _group_pids(proc.pid).values())
        files = [f for f in (runs / "stream").glob("*.jsonl") if not (runs / "collected" / f"{f.stem}.done").exists()]
        if grading and any(f.stat().st_size for f in files):
            return
        time.sleep(0.05)


def test_kill_9_of_collector_or_grader_loses_no_graded_record_and_trains_none_twice(tiny_model, tmp_path):
    from tests.agent.standin_server import StandInServer

    runs = tmp_path / "runs"
    pool = tmp_path / "pool.jsonl"
    pool.write_text((EXAMPLES / "toy-tasks.jsonl").read_text().splitlines()[0] + "\n")
    rng = random.Random(int(time.time()))
    kills: list[str] = []
    with StandInServer(str(tiny_model), t_max=5, latency_s=0.3) as server:
        url = server.base_url.removesuffix("/v1")
        env = os.environ | {
            "RUNS": str(runs), "URL": url, "POOL": str(pool), "G": str(G), "POOL_GROUPS": "1", "SEED": "0",
            "MAX_TURNS": "5", "CONTEXT": "4096", "MAX_NEW_TOKENS": "48", "CONCURRENCY": str(G), "STALENESS": "1",
            "SWERL": SWERL,
        }  # fmt: skip
        (runs / "stream").mkdir(parents=True)
        trainer = subprocess.Popen(
            [*SWERL.split(), "dapo", "--follow", str(runs / "stream"), "--model", str(tiny_model), "--output",
             str(runs), "--max-staleness", "100", "--groups-per-update", "1", "--max-updates", str(PASSES),
             "--group-size", str(G), "--batch-size", str(G), "--t-max", "5", "--l-thr", "3", "--lr", "1e-3",
             "--micro-batch-tokens", "8192", "--rerender", "--idle-timeout", "300"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=os.environ.copy(),
        )  # fmt: skip
        try:
            # the first kill hits a grade that has written records (the torn-line path), then the others in any order
            for i, target in enumerate(
                ["grade", *rng.sample(["collector", "collect"], 2), rng.choice(["collect", "grade"])]
            ):
                proc = _collector(env)
                t0 = time.monotonic()
                if i == 0:
                    _wait_for_writing_grade(proc, runs)
                try:
                    proc.wait(timeout=rng.uniform(0.0, 0.3) if i == 0 else rng.uniform(1.0, 12.0))
                except subprocess.TimeoutExpired:
                    kills.append(f"{_kill(proc, target, runs)} at {time.monotonic() - t0:.1f}s")
            proc = _collector(env)
            assert proc.wait(timeout=600) == 0, f"collector failed after kills {kills}"
            out, _ = trainer.communicate(timeout=600)
        finally:
            if trainer.poll() is None:
                trainer.kill()
                trainer.wait()
            # a SIGKILLed collect or grade cannot remove its sandboxes: remove them as a user's prune would
            subprocess.run([*SWERL.split(), "sandbox", "prune", "--stale"], capture_output=True, timeout=300)
    assert trainer.returncode == 0, kills
    stream: list[str] = []
    for r in range(PASSES):
        raw = (runs / "stream" / f"async-{r}.jsonl").read_bytes()
        assert raw.endswith(b"\n"), f"pass {r}: torn last line left (kills {kills})"
        ids = [json.loads(x)["id"] for x in raw.splitlines()]  # every line whole JSON
        assert sorted(ids) == [f"swerl-examples__greet-1/async-{r}/{s}" for s in range(G)], (r, ids, kills)
        collected = [json.loads(x)["id"] for x in (runs / "collected" / f"async-{r}.jsonl").read_text().splitlines()]
        assert sorted(collected) == sorted(ids), (r, kills)
        stream += ids
    batches = [(runs / f"iter-{n}" / "graded.jsonl").read_text() for n in range(PASSES)]
    trained = [json.loads(x)["id"] for b in batches for x in b.splitlines()]
    assert sorted(trained) == sorted(stream), f"lost or doubled records (kills {kills})"
    state = json.loads((runs / "follow_state.json").read_text())
    summaries = [json.loads(x) for x in out.decode().splitlines()]
    # the global step counts each update's optimizer steps once (a group of one reward is skipped: 0 steps)
    steps = sum(x["steps"] for x in summaries)
    assert (state["updates"], state["global_step"], state["dropped_stale"]) == (PASSES, steps, 0), kills
    assert steps >= 1
    assert sorted(state["consumed"]) == sorted(stream)
    assert [x["follow"]["update"] for x in summaries] == list(range(PASSES))
    print(f"kills: {kills}")


def test_the_collector_counts_the_passes_the_trainer_used(tmp_path):
    """The throttle's count (rl-async.sh `used`): updates plus whole passes of dropped groups, from the state file."""
    (tmp_path / "follow_state.json").write_text(json.dumps({"updates": 3, "dropped_stale": 5, "consumed": []}))
    funcs = "\n".join(
        x for x in (ROOT / "scripts" / "rl-async.sh").read_text().splitlines() if x.startswith(("field()", "used()"))
    )
    env = os.environ | {"RUNS": str(tmp_path), "POOL_GROUPS": "2"}
    got = subprocess.run(["bash", "-euo", "pipefail", "-c", f"{funcs}\nused"], env=env, capture_output=True, text=True)
    assert (got.returncode, got.stdout.strip(), got.stderr) == (0, "5", "")
    (tmp_path / "follow_state.json").unlink()  # before the first commit: nothing used
    got = subprocess.run(["bash", "-euo", "pipefail", "-c", f"{funcs}\nused"], env=env, capture_output=True, text=True)
    assert got.stdout.strip() == "0"


@pytest.mark.parametrize(
    ("staleness", "groups", "g", "batch", "want"),
    [
        ("2", "4", "4", None, "2"),  # no BATCH: one step per update, K passes ahead
        ("2", "4", "4", "16", "2"),  # 16 samples, batch 16: one step per update
        ("4", "16", "4", "16", "1"),  # paper-mini: up to 4 steps per update, K = 4 is one pass ahead
        ("8", "16", "4", "16", "2"),
        ("1", "16", "4", "16", "1"),  # K below the steps of one update: still 1 (0 would be the sync loop)
    ],
)
def test_the_collector_runs_ahead_by_staleness_over_steps_per_update(staleness, groups, g, batch, want):
    """Staleness K counts optimizer steps; a pass started A updates ahead is trained about A x S steps later, S the
    steps one update makes (ceil(POOL_GROUPS x G / BATCH)): the collector runs A = max(1, K // S) ahead."""
    funcs = "\n".join(
        x
        for x in (ROOT / "scripts" / "rl-async.sh").read_text().splitlines()
        if x.startswith(("steps_per_update()", "ahead()"))
    )
    env = {k: v for k, v in os.environ.items() if k != "BATCH"}
    env |= {"STALENESS": staleness, "POOL_GROUPS": groups, "G": g} | ({"BATCH": batch} if batch else {})
    got = subprocess.run(["bash", "-euo", "pipefail", "-c", f"{funcs}\nahead"], env=env, capture_output=True, text=True)
    assert (got.returncode, got.stdout.strip(), got.stderr) == (0, want, "")


FAKE_SWERL = r"""#!/usr/bin/env bash
# collect: log start/end of its pass (--run async-r), one line out; grade: read it, write nothing
if [ "$1" = collect ]; then
  while [ $# -gt 0 ] && [ "$1" != --run ]; do shift; done
  echo "start $2" >> "$LOG"; sleep "$NAP"; echo '{}'; echo "end $2" >> "$LOG"
else
  cat > /dev/null
fi
"""


def _wait_for(cond, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def test_the_collector_runs_k_plus_1_passes_at_once_and_no_further_ahead(tmp_path):
    """scripts/rl-async.sh's collector: passes overlap (K + 1 at once, never more), and pass r waits until the
    trainer has used pass r - K - 1 (its `used` count from follow_state.json)."""
    fake, log = tmp_path / "swerl", tmp_path / "log"
    fake.write_text(FAKE_SWERL)
    fake.chmod(0o755)
    state = tmp_path / "follow_state.json"
    state.write_text(json.dumps({"updates": 0, "dropped_stale": 0}))
    env = os.environ | {
        "RUNS": str(tmp_path), "URL": "http://127.0.0.1:9", "POOL": "pool.jsonl", "G": "2", "POOL_GROUPS": "1",
        "SEED": "0", "MAX_TURNS": "1", "CONTEXT": "64", "MAX_NEW_TOKENS": "8", "CONCURRENCY": "1", "STALENESS": "1",
        "SWERL": str(fake), "LOG": str(log), "NAP": "1.5",
    }  # fmt: skip
    cmd = ["bash", str(ROOT / "scripts" / "rl-async.sh"), "collector", "0", "3"]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, start_new_session=True)
    try:
        _wait_for(lambda: log.exists() and log.read_text().count("end ") == 2)
        time.sleep(2.5)  # passes 0 and 1 ran side by side and ended; pass 2 is 2 ahead of `used` (0): it waits
        events = log.read_text().split("\n")[:-1]
        assert sorted(events[:2]) == ["start async-0", "start async-1"], events  # both before either ended
        assert sorted(events) == ["end async-0", "end async-1", "start async-0", "start async-1"], events
        state.write_text(json.dumps({"updates": 1, "dropped_stale": 0}))  # the trainer used pass 0: pass 2 may go
        _wait_for(lambda: "start async-2" in log.read_text())
        time.sleep(2.5)
        assert "start async-3" not in log.read_text()  # 2 ahead of `used` (1) again
        state.write_text(json.dumps({"updates": 2, "dropped_stale": 0}))
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    events = log.read_text().split("\n")[:-1]
    running, most = 0, 0
    for e in events:
        running += 1 if e.startswith("start") else -1
        most = max(most, running)
    assert most == 2, events  # K + 1 at once, never more
    assert all((tmp_path / "collected" / f"async-{r}.done").exists() for r in range(4))
