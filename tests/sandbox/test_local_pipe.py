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
