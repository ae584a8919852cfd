"""A SWE-smith row with no base_commit, offline: the sandbox commits the bug onto the image's HEAD at start."""

from __future__ import annotations

import base64
import hashlib
import secrets
import subprocess

import pytest

from swerl_cli.grading.grade import GradeConfig, grade_patch
from swerl_cli.sandbox import open_sandbox
from swerl_cli.sandbox.build import build_image
from swerl_cli.streams.records import Located, Task
from swerl_cli.tasks.importers import import_row, reverse_patch
from tests.sandbox.engines import DOCKER
from tests.sandbox.toy import CALC_FIXED, F2P, P2P, TEST_CMD, toy_task

pytestmark = pytest.mark.docker


def test_smith_row_without_base_commit_runs_offline_and_hides_the_code_before_the_bug(tmp_path) -> None:
    env = toy_task(tmp_path, f"swerl-test-smith:{secrets.token_hex(4)}", dirty=False)  # an env image: fix committed
    fixed = base64.b64encode((env["patch"] + env["test_patch"]).encode()).decode()
    env["setup"] = [
        *env["setup"],
        f"echo {fixed} | base64 -d > /tmp/f.patch && cd /testbed && git apply /tmp/f.patch && rm /tmp/f.patch",
        "cd /testbed && git add -A && git -c user.name=t -c user.email=t@t commit -qm upstream",
    ]
    try:
        build_image(Task.from_json(Located("env", 1, env)), DOCKER, hygiene=False)
        row = {
            "instance_id": "toy__calc.0123abcd.func_pm_op_swap__x1",
            "repo": "swesmith/toy__calc.0123abcd",
            "patch": reverse_patch(env["patch"]),  # SWE-smith's patch introduces the bug
            "FAIL_TO_PASS": F2P,
            "PASS_TO_PASS": P2P,
            "image_name": env["image"],
            "problem_statement": "add() subtracts",
            "test_cmd": TEST_CMD,
        }
        task = Task.from_json(Located("smith", 1, import_row(Located("smith.jsonl", 1, row))))
        assert (task.base_commit, task.extra["patch_kind"]) == ("HEAD", "bug")
        with open_sandbox(task, DOCKER, run_id="pytest-smith") as sb:
            assert "a - b" in sb.run("cat calc.py").output  # the bug is there
            assert sb.run("git log --all --oneline | wc -l").output.strip() == "1"
            fixed_blob = hashlib.sha1(f"blob {len(CALC_FIXED)}\0{CALC_FIXED}".encode()).hexdigest()
            assert sb.run(f"git cat-file -e {fixed_blob}").exit_code != 0  # the code before the bug is gone
            assert sb.run("git status --porcelain").output == ""
            sb.write_file("calc.py", CALC_FIXED)
            assert "+    return a + b  # FIXED-MARKER-7f3a" in sb.diff()
        cfg = GradeConfig()
        assert grade_patch(task, task.patch, cfg, "pytest-smith")["status"] == "resolved"
        assert grade_patch(task, "", cfg, "pytest-smith")["status"] == "unresolved"
    finally:
        subprocess.run(["docker", "rmi", "-f", env["image"]], capture_output=True)
