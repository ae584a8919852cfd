"""A bad row costs one record, never the run (issue 21): a task row whose image, workdir or base_commit docker or
git would refuse is an error record naming the row and the field; the other rows run; the exit code is 4; and
`--resume` skips the written error, so the run finishes. Real CLI, real pipes, real Docker engine."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import orjson
import pytest

from tests.conftest import EXAMPLES, containers, run_swerl

pytestmark = pytest.mark.docker

ROWS = [orjson.loads(line) for line in (EXAMPLES / "tasks.jsonl").read_bytes().splitlines()[:3]]
EXIT_ROWS_FAILED = 4


def _rows(**bad: str) -> bytes:
    """Three example task rows, the middle one with the `bad` fields."""
    rows = [dict(r) for r in ROWS]
    rows[1].update(bad)
    return b"".join(orjson.dumps(r) + b"\n" for r in rows)


def _lines(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _one_error_line(stderr: bytes) -> str:
    err = stderr.decode()
    assert "Traceback" not in err, err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("image", "swerl-example BAD", "holds a space"),
        ("image", "Swerl-Example/Greet:latest", "path component 'Greet'"),
        ("image", "x:tag;id", "tag 'tag;id'"),
        ("workdir", "testbed", "must be an absolute path"),
        ("base_commit", "--orphan=x", "starts with '-'"),
    ],
)
def test_collect_then_grade_a_bad_row_costs_one_record_exit_4(
    tmp_path: Path, field: str, value: str, needle: str
) -> None:
    run = f"badrow-{secrets.token_hex(3)}"
    traj = tmp_path / "traj.jsonl"
    res = run_swerl("collect", "--policy", "gold", "--run", run, "-o", str(traj), input=_rows(**{field: value}))
    last = _one_error_line(res.stderr)
    assert res.returncode == EXIT_ROWS_FAILED, res.stderr.decode()
    assert res.stdout == b""
    assert f"<stdin>:2: field '{field}'" in last
    assert needle in last
    assert "1 of 3 records" in last
    recs = {r["instance_id"]: r for r in _lines(traj)}
    assert len(recs) == 3
    bad = recs[ROWS[1]["instance_id"]]
    assert bad["exit_status"] == "error"
    assert bad["invalid_field"] == field
    assert f"<stdin>:2: field '{field}'" in bad["error"]
    assert [recs[r["instance_id"]]["exit_status"] for r in (ROWS[0], ROWS[2])] == ["submitted", "submitted"]
    assert containers(f"swerl.run={run}") == []

    again = run_swerl("collect", "--policy", "gold", "--run", run, "-o", str(traj), "--resume", input=_rows())
    assert again.returncode == EXIT_ROWS_FAILED  # the written error still counts; nothing runs again
    assert len(_lines(traj)) == 3

    graded = tmp_path / "graded.jsonl"
    res = run_swerl("grade", "-o", str(graded), input=traj.read_bytes())  # `swerl grade < traj.jsonl`
    last = _one_error_line(res.stderr)
    assert res.returncode == EXIT_ROWS_FAILED, res.stderr.decode()
    assert f"field 'task.{field}'" in last
    by_id = {r["instance_id"]: r["grade"] for r in _lines(graded)}
    assert by_id[ROWS[1]["instance_id"]]["status"] == "error"
    assert by_id[ROWS[1]["instance_id"]]["invalid_field"] == f"task.{field}"
    assert by_id[ROWS[1]["instance_id"]]["reward"] is None
    assert [by_id[r["instance_id"]]["status"] for r in (ROWS[0], ROWS[2])] == ["resolved", "resolved"]
    resumed = run_swerl("grade", "-o", str(graded), "--resume", input=traj.read_bytes())
    assert resumed.returncode == EXIT_ROWS_FAILED
    assert b"0 graded (3 skipped)" in resumed.stderr
    assert len(_lines(graded)) == 3


def test_grade_of_a_bad_image_in_a_trajectory_from_elsewhere(tmp_path: Path) -> None:
    """A trajectory whose embedded task has a bad image (not from collect): graded error, the others graded."""
    rows = [dict(r) for r in ROWS]
    rows[1]["image"] = "../../containers/json"
    trajs = [
        {"id": f"{r['instance_id']}/x/0", "instance_id": r["instance_id"], "task": r, "patch": r["patch"]} for r in rows
    ]
    res = run_swerl("grade", input=b"".join(orjson.dumps(t) + b"\n" for t in trajs))
    assert res.returncode == EXIT_ROWS_FAILED, res.stderr.decode()
    out = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert sorted(r["grade"]["status"] for r in out) == ["error", "resolved", "resolved"]
    assert "<stdin>:2: field 'task.image'" in _one_error_line(res.stderr)


def test_an_image_the_engine_refuses_after_the_grammar_is_an_error_record_not_a_traceback(tmp_path: Path) -> None:
    """The reference grammar allows any digest algorithm; the engine knows only sha256/384/512. Its 400 reply,
    a docker-SDK exception, is caught at the row's boundary: an error record (an engine failure: exit 0)."""
    rows = [dict(r) for r in ROWS[:2]]
    rows[0]["image"] = "swerl-example-greet@md5:" + "0" * 32
    out = tmp_path / "t.jsonl"
    res = run_swerl(
        "collect", "--policy", "gold", "-o", str(out), input=b"".join(orjson.dumps(r) + b"\n" for r in rows)
    )
    assert b"Traceback" not in res.stderr, res.stderr.decode()
    assert b"never retrieved" not in res.stderr, res.stderr.decode()
    assert res.returncode == 0, res.stderr.decode()
    recs = {r["instance_id"]: r for r in _lines(out)}
    assert recs[rows[0]["instance_id"]]["exit_status"] == "error"
    assert "unsupported digest algorithm" in recs[rows[0]["instance_id"]]["error"]
    assert recs[rows[1]["instance_id"]]["exit_status"] == "submitted"


def test_tasks_build_reports_bad_rows_and_builds_the_rest(tmp_path: Path, made_images: list[str]) -> None:
    from tests.sandbox.toy import make_repo

    info = make_repo(tmp_path / "src", dirty=False)
    allowed = tmp_path / "src"
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "config.json").write_text('{"auths": {"x": "TOKEN-SECRET"}}')
    (allowed / "escape").symlink_to(secret / "config.json")  # under the allowed dir, pointing out of it
    (allowed / "notabundle").write_text("TOKEN-SECRET\n")
    tag = secrets.token_hex(4)
    good = {**ROWS[0], **info, "instance_id": "good", "image": f"swerl-test-rows-good:{tag}", "setup": []}
    good["repo_source"] = str(allowed / "repo")
    rows = [
        good,
        {**good, "instance_id": "bad-image", "image": "swerl-test-rows BAD"},
        {**good, "instance_id": "escape", "image": f"swerl-test-rows-escape:{tag}",
         "repo_source": str(allowed / "escape"), "setup": ["cat /tmp/swerl-source.bundle"]},
        {**good, "instance_id": "host", "image": f"swerl-test-rows-host:{tag}", "repo_source": "/etc/hostname"},
        {**good, "instance_id": "fetch-fails", "image": f"swerl-test-rows-fetch:{tag}",
         "repo_source": str(allowed / "notabundle"), "setup": ["cat /tmp/swerl-source.bundle"]},
        {**good, "instance_id": "bad-setup", "image": f"swerl-test-rows-setup:{tag}", "setup": {"x": 1}},
        {**good, "instance_id": "ext", "image": f"swerl-test-rows-ext:{tag}", "repo_source": "ext::sh -c id"},
    ]  # fmt: skip
    made_images.extend(r["image"] for r in rows if " " not in r["image"])
    src = tmp_path / "rows.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    res = run_swerl("tasks", "build", str(src), "--allow-source", str(allowed), "-v")
    err = res.stderr.decode()
    assert "Traceback" not in err, err
    assert "TOKEN-SECRET" not in err, err
    assert res.returncode == EXIT_ROWS_FAILED, err
    assert "[1/7] swerl-test-rows-good" in err
    assert ": built" in err
    assert f"{src}:2: field 'image'" in err
    assert f"{src}:3: field 'repo_source'" in err
    assert "not under a directory allowed" in err
    assert f"{src}:4: field 'repo_source'" in err
    assert f"{src}:5: " in err
    assert "setup failed" in err
    assert f"{src}:6: field 'setup'" in err
    assert f"{src}:7: field 'repo_source'" in err
    assert "only https://" in err
    assert "6 of 7 rows could not be built" in err.strip().splitlines()[-1]
    have = subprocess.run(["docker", "images", "--format", "{{.Repository}}"], capture_output=True, text=True)
    assert "swerl-test-rows-good" in have.stdout.split()
    for name in ("escape", "host", "fetch", "setup", "ext"):
        assert f"swerl-test-rows-{name}" not in have.stdout.split()


def test_tasks_pull_and_validate_give_a_bad_image_row_its_own_record_exit_4(tmp_path: Path) -> None:
    rows = _rows(image="Bad Image")
    pulled = run_swerl("tasks", "pull", input=rows)
    assert pulled.returncode == EXIT_ROWS_FAILED, pulled.stderr.decode()
    assert "<stdin>:2: field 'image'" in _one_error_line(pulled.stderr)
    recs = [orjson.loads(line) for line in pulled.stdout.splitlines()]
    assert [r["status"] for r in recs] == ["error", "present", "present"]
    assert recs[0]["invalid_field"] == "image"
    assert recs[0]["registry"] is None  # never sent to the engine

    out = tmp_path / "valid.jsonl"
    res = run_swerl("tasks", "validate", "-r", "1", "--workers", "2", "-o", str(out), input=rows)
    assert res.returncode == EXIT_ROWS_FAILED, res.stderr.decode()
    assert "<stdin>:2: field 'image'" in _one_error_line(res.stderr)
    by_id = {r["instance_id"]: r["validation"] for r in _lines(out)}
    assert by_id[ROWS[1]["instance_id"]]["valid"] is False
    assert by_id[ROWS[1]["instance_id"]]["invalid_field"] == "image"
    assert [by_id[r["instance_id"]]["valid"] for r in (ROWS[0], ROWS[2])] == [True, True]
    again = run_swerl("tasks", "validate", "-r", "1", "-o", str(out), "--resume", input=rows)
    assert again.returncode == EXIT_ROWS_FAILED
    assert b"(3 already in the output)" in again.stderr
    assert len(_lines(out)) == 3


def test_grade_of_prediction_rows_whose_task_has_a_bad_image(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(_rows(image="swerl-example:Bad Tag"))
    preds = [{"instance_id": r["instance_id"], "model_name_or_path": "m", "model_patch": r["patch"]} for r in ROWS]
    res = run_swerl("grade", "--tasks", str(tasks), input=b"".join(orjson.dumps(p) + b"\n" for p in preds))
    assert res.returncode == EXIT_ROWS_FAILED, res.stderr.decode()
    assert "<stdin>:2: field 'task.image'" in _one_error_line(res.stderr)
    out = {orjson.loads(line)["instance_id"]: orjson.loads(line)["grade"] for line in res.stdout.splitlines()}
    assert out[ROWS[1]["instance_id"]]["invalid_field"] == "task.image"
    assert [out[r["instance_id"]]["status"] for r in (ROWS[0], ROWS[2])] == ["resolved", "resolved"]
