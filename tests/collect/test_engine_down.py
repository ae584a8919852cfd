"""An engine that does not answer stops `collect` with one line, before any record (core/config_stop.py): the first
episodes all fail to get a sandbox and the backend confirms its engine is down. (paper-mini-gain's rollouts once wrote
104 identical error records and exited 0 when dockerd had not started; the stage then counted as done.)"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_swerl

ROOT = Path(__file__).resolve().parents[2]


def test_collect_against_an_engine_that_does_not_answer_is_one_line_and_exit_1(tmp_path: Path) -> None:
    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    p = run_swerl("collect", "--policy", "gold", str(ROOT / "examples" / "tasks.jsonl"), env=env, timeout=300)
    err = p.stderr.decode().strip().splitlines()
    assert p.returncode == 1, p.stderr.decode()
    assert p.stdout == b""  # no error record per episode
    assert len(err) == 1
    assert err[0].startswith(
        "swerl collect: the first 3 episodes could not get a sandbox and the engine does not answer"
    )
    assert "Traceback" not in p.stderr.decode()
