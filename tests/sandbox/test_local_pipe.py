"""`--sandbox local` as a user runs it: `swerl collect ... | swerl grade` through a real shell pipe on clones made by
`python examples/build_tasks.py --clones DIR` resolves the gold patches; without `--repo-dir` the command stops
before any episode with one line (it used to write one identical error record per episode and exit 0)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLES, run_swerl

SWERL = f"{shlex.quote(sys.executable)} -m swerl_cli"


def test_collect_local_pipes_into_grade_local_and_the_gold_patches_resolve(example_clones: Path, tmp_path: Path):
    tasks = tmp_path / "tasks.jsonl"
    rows = EXAMPLES.joinpath("tasks.jsonl").read_text().splitlines()[:2]
    tasks.write_text("\n".join(rows) + "\n")
    repo = shlex.quote(str(example_clones))
    cmd = (
        f"set -o pipefail; {SWERL} collect {tasks} --policy gold --sandbox local --repo-dir {repo} "
        f"| {SWERL} grade --sandbox local --repo-dir {repo}"
    )
    # the tests' own runner (pytest) comes from the venv, as for a user who activated it
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    res = subprocess.run(["bash", "-c", cmd], capture_output=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr.decode()[-3000:]
    graded = [json.loads(line) for line in res.stdout.splitlines()]
    assert sorted(g["instance_id"] for g in graded) == sorted(json.loads(r)["instance_id"] for r in rows)
    for g in graded:
        assert g["exit_status"] == "submitted", g.get("error")
        assert (g["grade"]["status"], g["grade"]["reward"]) == ("resolved", 1.0), g["grade"]


def test_collect_local_without_repo_dir_stops_with_one_line_before_any_episode(tmp_path: Path) -> None:
    res = run_swerl("collect", str(EXAMPLES / "tasks.jsonl"), "--policy", "gold", "--sandbox", "local")
    err = res.stderr.decode().strip().splitlines()
    assert res.returncode == 3, err
    assert res.stdout == b""
    assert len(err) == 1, err
    assert "--sandbox local needs --repo-dir" in err[0]
    missing = run_swerl("grade", "-", "--sandbox", "local", "--repo-dir", str(tmp_path / "nope"), input=b"")
    assert missing.returncode == 2
    assert "is not a directory" in missing.stderr.decode()


def test_collect_whose_every_episode_fails_on_the_configuration_stops_with_one_line(tmp_path: Path) -> None:
    """A --repo-dir holding none of the tasks' clones: every episode would be one `ConfigError` record (it used to
    write 8 of them and exit 0); the run stops after the first episodes with one line, exit 3, nothing written."""
    (tmp_path / "repos").mkdir()
    res = run_swerl(
        "collect", str(EXAMPLES / "tasks.jsonl"), "--policy", "gold", "--sandbox", "local",
        "--repo-dir", str(tmp_path / "repos"), "--concurrency", "1", "-o", str(tmp_path / "t.jsonl"),
    )  # fmt: skip
    err = res.stderr.decode().strip().splitlines()
    assert res.returncode == 3, err
    assert len(err) == 1, err
    assert err[0].startswith("swerl collect: the first 3 episodes failed on the configuration, none wrote a record")
    assert "no git repository for swerl-examples/" in err[0]
    out = tmp_path / "t.jsonl"
    assert not (out.exists() and out.read_bytes())  # no record (a file the run created and left empty is removed)


def _trajectories(rows: list[dict]) -> bytes:
    recs = [{"id": f"{r['instance_id']}/t/0", "instance_id": r["instance_id"], "task": r, "patch": r["patch"]}
            for r in rows]  # fmt: skip
    return b"".join(json.dumps(r).encode() + b"\n" for r in recs)


def test_grade_records_a_rows_configuration_error_and_stops_only_when_every_job_has_one(
    example_clones: Path, tmp_path: Path
) -> None:
    """One task's clone missing from --repo-dir is that record's error (it used to end the whole run, exit 3);
    every task's missing stops the run with one line."""
    rows = [json.loads(r) for r in EXAMPLES.joinpath("tasks.jsonl").read_text().splitlines()[:2]]
    (tmp_path / "in.jsonl").write_bytes(_trajectories(rows))
    one = tmp_path / "one"
    one.mkdir()
    name = rows[1]["repo"].replace("/", "__")
    (one / name).symlink_to(example_clones / name)
    res = run_swerl("grade", str(tmp_path / "in.jsonl"), "--sandbox", "local", "--repo-dir", str(one))
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    graded = {g["instance_id"]: g["grade"] for g in map(json.loads, res.stdout.splitlines())}
    assert graded[rows[0]["instance_id"]]["status"] == "error"
    assert graded[rows[0]["instance_id"]]["error"].startswith("ConfigError: ")
    assert graded[rows[1]["instance_id"]]["status"] == "resolved"
    (tmp_path / "none").mkdir()
    res = run_swerl("grade", str(tmp_path / "in.jsonl"), "--sandbox", "local", "--repo-dir", str(tmp_path / "none"))
    err = res.stderr.decode().strip().splitlines()
    assert res.returncode == 3, err
    assert res.stdout == b""
    assert [line for line in err if "failed on the configuration" in line] == err[-1:]
    assert err[-1].startswith("swerl grade: all 2 grading jobs failed on the configuration, none wrote a record")
