"""stream_jobs over the local executor: a bounded window, results as they finish, known results passed through, and
an interrupted stream cancels what is queued and runs the cleanup. No Ray, no Docker."""

from __future__ import annotations

import threading
import time

import pytest

from swerl_cli.core.errors import ConfigError
from swerl_cli.executor import LocalExecutor, Outcome, Placement, node_label, ray_address, stream_jobs


class _Gauge:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def job(self, i: int, delay_s: float) -> int:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(delay_s)
        with self.lock:
            self.now -= 1
        return i * i


def test_stream_jobs_runs_every_job_within_the_window() -> None:
    gauge = _Gauge()
    jobs = ((i, gauge.job, (i, 0.01)) for i in range(20))
    out = dict(stream_jobs(LocalExecutor(3), jobs))
    assert {k: v.value for k, v in out.items()} == {i: i * i for i in range(20)}
    assert gauge.peak == 3
    assert all(v.node["ray_node_id"] is None and v.node["host"] for v in out.values())


def test_stream_jobs_passes_known_results_through_without_running_them() -> None:
    gauge = _Gauge()
    jobs = [("a", None, {"status": "error"}), ("b", gauge.job, (2, 0.0))]
    out = dict(stream_jobs(LocalExecutor(1), jobs))
    assert out["a"] == Outcome({"status": "error"}, None)
    assert out["b"].value == 4
    assert gauge.peak == 1


def test_stream_jobs_interrupted_cancels_the_queue_and_cleans_up() -> None:
    started, cleaned = [], []

    def job(i: int) -> int:
        started.append(i)
        time.sleep(0.2)
        return i

    def jobs():
        yield from ((i, job, (i,)) for i in range(3))
        raise ConfigError("tasks.jsonl:4: bad line")  # a bad input line read while jobs run

    with pytest.raises(ConfigError, match="bad line"):
        list(stream_jobs(LocalExecutor(2), jobs(), cleanup=lambda: cleaned.append(True)))  # window 4
    assert cleaned == [True]
    assert sorted(started) == [0, 1]  # two workers busy; the queued third job never started


def test_placement_and_address_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="--episode-cpus"):
        Placement(cpus=-1)
    with pytest.raises(ConfigError, match="--max-episode-retries"):
        Placement(max_retries=-1)
    monkeypatch.setenv("SWERL_RAY_ADDRESS", "head:6379")
    assert ray_address(None) == "head:6379"
    assert ray_address("auto") == "auto"
    monkeypatch.setenv("SWERL_RAY_ADDRESS", "")
    assert ray_address(None) is None
    assert node_label({"host": "vm", "ray_node_id": "0123456789abcdef"}) == "01234567"
    assert node_label({"host": "vm", "ray_node_id": None}) == "vm"
