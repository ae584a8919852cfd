"""`swerl tasks import` refuses the row values docker and git would refuse (issue 21): a bad image reference,
workdir or base_commit, a setup that is not shell commands, a repo_source that names a host path outside
--allow-source. One stderr line naming the row and the field, exit 3, `-o` untouched."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.conftest import run_swerl

ROW = {
    "instance_id": "o__r-1",
    "repo": "o/r",
    "base_commit": "a" * 40,
    "patch": "p",
    "test_patch": "",
    "problem_statement": "bug",
    "version": "1.0",
    "FAIL_TO_PASS": ["t::a"],
    "PASS_TO_PASS": [],
    "environment_setup_commit": "b" * 40,
}


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ({"image": "Bad Image"}, "field 'image': not a valid image reference 'Bad Image'"),
        ({"image_name": "x:tag;id"}, "field 'image': not a valid image reference 'x:tag;id'"),
        ({"docker_image": "../../containers/json"}, "field 'image'"),
        ({"workdir": "testbed"}, "field 'workdir'"),
        ({"base_commit": "--upload-pack=id"}, "field 'base_commit'"),
        ({"setup": "echo \0"}, "field 'setup': holds a NUL byte"),
        ({"setup": {"cmd": 1}}, "field 'setup'"),
        ({"repo_source": "/root/.docker/config.json"}, "field 'repo_source'"),
        ({"repo_source": "ext::sh -c id"}, "field 'repo_source': only https://"),
        ({"schema": "swerl.task/1", "image": "Bad", "workdir": "/testbed", "test_cmd": "t"}, "field 'image'"),
    ],
)
def test_import_refuses_values_docker_or_git_would_refuse(tmp_path: Path, bad: dict, needle: str) -> None:
    src, out = tmp_path / "rows.jsonl", tmp_path / "tasks.jsonl"
    out.write_text("old\n")
    src.write_bytes(orjson.dumps(ROW) + b"\n" + orjson.dumps({**ROW, **bad}) + b"\n")
    res = run_swerl("tasks", "import", str(src), "-o", str(out))
    err = res.stderr.decode().strip().splitlines()
    assert res.returncode == 3, err
    assert len(err) == 1, err
    assert f"{src}:2: {needle}" in err[0], err
    assert out.read_text() == "old\n"


def test_import_keeps_a_repo_source_under_an_allowed_directory_or_a_url(tmp_path: Path) -> None:
    (tmp_path / "repos" / "r").mkdir(parents=True)
    rows = [
        {**ROW, "repo_source": str(tmp_path / "repos" / "r")},
        {**ROW, "instance_id": "o__r-2", "repo_source": "https://github.com/o/r.git"},
    ]
    src = tmp_path / "rows.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    res = run_swerl("tasks", "import", str(src), "--allow-source", str(tmp_path / "repos"))
    assert res.returncode == 0, res.stderr.decode()
    got = [orjson.loads(line)["repo_source"] for line in res.stdout.splitlines()]
    assert got == [str(tmp_path / "repos" / "r"), "https://github.com/o/r.git"]
    refused = run_swerl("tasks", "import", str(src))  # no --allow-source: the host path is refused
    assert refused.returncode == 3
    assert "not under a directory allowed with --allow-source" in refused.stderr.decode()
