"""The bundled example tasks: generated file is current, records are valid, images hold exactly the base repo."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess

import pytest

from swerl_cli.streams.records import Located, Task
from tests.conftest import EXAMPLES, ROOT


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_tasks = _load("build_tasks")
verify_tasks = _load("verify_tasks")
TASKS = verify_tasks.load_tasks()
IDS = [repo_dir.name for _, repo_dir in TASKS]


def _read(name: str) -> list[dict]:
    return [json.loads(line) for line in (EXAMPLES / name).read_text().splitlines()]


def test_generated_jsonl_is_current():
    assert (EXAMPLES / "tasks.jsonl").read_text() == build_tasks.render("repos"), "run python examples/build_tasks.py"
    assert (EXAMPLES / "toy-tasks.jsonl").read_text() == build_tasks.render("toy"), "run python examples/build_tasks.py"


def test_examples_are_valid_task_records():
    tasks = _read("tasks.jsonl")
    assert len(tasks) >= 8
    for n, obj in enumerate(tasks, 1):
        task = Task.from_json(Located("tasks.jsonl", n, obj))
        assert obj["schema"] == "swerl.task/1"
        assert len(task.base_commit) == 40
        assert task.FAIL_TO_PASS
        assert not set(task.FAIL_TO_PASS) & set(task.PASS_TO_PASS)
        digest = hashlib.sha256(json.dumps(task.setup).encode()).hexdigest()[:12]
        assert task.image == f"swerl-example-{task.repo.split('/')[1]}:{digest}"
        assert all(path.startswith("tests/") for path in obj["test_files"])
        assert not any(p.startswith("tests/") for p in build_tasks.patch_files(task.patch or ""))
        assert "-rA" in task.test_cmd
        assert task.instance_id == f"swerl-examples__{task.repo.split('/')[1]}-1"
    assert len({t["instance_id"] for t in tasks}) == len(tasks)
    tags = {tag for t in tasks for tag in t["tags"]}
    assert {"multi-file", "naive-fix-breaks-p2p", "parametrized-ids", "hard"} <= tags
    ids = [i for t in tasks for i in t["FAIL_TO_PASS"]]
    assert any(" " in i and "[" in i.split("::")[-1] for i in ids), "a parametrized F2P id with spaces and brackets"


def test_toy_task_fix_is_one_line_deletion():
    (toy,) = _read("toy-tasks.jsonl")
    changed = [line for line in toy["patch"].splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert len(changed) == 1
    assert changed[0].startswith("-")
    assert changed[0][1:] in toy["problem_statement"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize(("task", "repo_dir"), TASKS, ids=IDS)
def test_setup_commands_reproduce_base_commit(task, repo_dir, tmp_path):
    # The setup's last command checks HEAD == base_commit, so this proves the hash computed without git is right.
    script = " && ".join(f"( {c} )" for c in task["setup"]).replace(task["workdir"], str(tmp_path / "testbed"))
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def example_images():
    script = str(ROOT / "scripts/example-images.sh")
    proc = subprocess.run(["bash", script], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.docker
def test_example_images_script_is_idempotent(example_images):
    again = subprocess.run(["bash", str(ROOT / "scripts/example-images.sh")], capture_output=True, text=True)
    assert again.returncode == 0
    assert "building" not in again.stderr


@pytest.mark.docker
@pytest.mark.parametrize(("task", "repo_dir"), TASKS, ids=IDS)
def test_example_image_is_sound(example_images, task, repo_dir):
    assert verify_tasks.verify_task(task, repo_dir) == []
