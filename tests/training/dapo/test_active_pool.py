"""The active pool (`make rl ACTIVE_POOL=1`, scripts/active_pool.py): each iteration keeps the tasks neither always
solved nor never solved over the graded history so far; unseen tasks stay, infrastructure errors are no evidence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.records import rollout

ROOT = Path(__file__).resolve().parents[3]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _group(iid: str, run: str, solved: int, g: int = 8, **kw: object) -> list[dict]:
    return [rollout(iid, i, run=run, resolved=i < solved, **kw) for i in range(g)]  # type: ignore[arg-type]


def _pool(tmp: Path, graded: list[Path]) -> tuple[list[str], subprocess.CompletedProcess[bytes]]:
    tasks = _write(tmp / "tasks.jsonl", [{"instance_id": t, "repo": "r"} for t in "ABCDEF"])
    out = tmp / "pool.jsonl"
    cmd = [sys.executable, str(ROOT / "scripts" / "active_pool.py"), str(tasks), str(out), *map(str, graded)]
    proc = subprocess.run(cmd, capture_output=True, cwd=ROOT, timeout=60)
    ids = [json.loads(x)["instance_id"] for x in out.read_text().splitlines()] if proc.returncode == 0 else []
    return ids, proc


def test_active_pool_over_a_two_iteration_history(tmp_path: Path) -> None:
    """G = 8. A: 8/8 then 8/8 (always solved) out; B: 0/8 then 0/8 (never) out; C: 5/8 then 8/8 (solved by now,
    not always) in; D: 3/8 (not sampled again) in; E: 0/8 beside two infrastructure errors (no evidence), out; F:
    unseen, in."""
    it0 = _write(
        tmp_path / "iter-0.jsonl",
        _group("A", "iter-0", 8) + _group("B", "iter-0", 0) + _group("C", "iter-0", 5) + _group("D", "iter-0", 3),
    )
    errors = [rollout("E", 8 + i, run="iter-1", resolved=False, status="error") for i in range(2)]
    it1 = _write(
        tmp_path / "iter-1.jsonl",
        _group("A", "iter-1", 8) + _group("B", "iter-1", 0) + _group("C", "iter-1", 8) + _group("E", "iter-1", 0)
        + errors,
    )  # fmt: skip
    ids, proc = _pool(tmp_path, [it0, it1])
    assert proc.returncode == 0, proc.stderr.decode()
    assert ids == ["C", "D", "F"]
    assert "3 of 6 tasks (1 unseen); dropped 1 always solved, 2 never solved" in proc.stderr.decode()
    # before any iteration: nothing known, every task is sampled; after iteration 0 only: A and B out already
    assert _pool(tmp_path, [])[0] == list("ABCDEF")
    assert _pool(tmp_path, [it0])[0] == ["C", "D", "E", "F"]


def test_active_pool_bad_graded_record_is_one_line_exit_3(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rollout("A", 0)) + "\n" + '{"schema": "swerl.graded/1"}\n')
    _, proc = _pool(tmp_path, [bad])
    err = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 3
    assert len(err) == 1
    assert f"{bad}:2" in err[0]
    assert not (tmp_path / "pool.jsonl").exists()


def test_active_pool_with_no_task_left_stops_the_loop(tmp_path: Path) -> None:
    """Every task always or never solved: exit 1, one stderr line, no pool file (make rl stops, nothing collected)."""
    hist = [_group(t, "iter-0", 8 if t in "ACE" else 0) for t in "ABCDEF"]
    graded = _write(tmp_path / "iter-0.jsonl", [r for g in hist for r in g])
    ids, proc = _pool(tmp_path, [graded])
    assert proc.returncode == 1
    assert ids == []
    assert "3 always solved, 3 never solved" in proc.stderr.decode()
    assert len(proc.stderr.decode().strip().splitlines()) == 1
    assert not (tmp_path / "pool.jsonl").exists()
