"""`swerl grade` against the real engine on the example tasks and the toy task."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import orjson
import pytest

from swerl_cli.grading.grade import GradeConfig, grade_patch
from swerl_cli.grading.jobs import grade_records
from swerl_cli.streams.records import Located, Task
from tests.conftest import ROOT, containers, run_swerl
from tests.records import trajectory, write_jsonl

pytestmark = pytest.mark.docker
BAD_PATCH = "diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-x\n+y\n"


def test_gold_resolves_every_example_and_empty_none(example_tasks, toy, tmp_path) -> None:
    tasks = [*example_tasks, toy]
    write_jsonl(
        tmp_path / "in.jsonl",
        [trajectory(t, k, t["patch"] if k == "gold" else "") for t in tasks for k in ("gold", "empty")],
    )
    res = run_swerl(
        "grade",
        str(tmp_path / "in.jsonl"),
        "--workers",
        "3",
        "--report",
        str(tmp_path / "r.json"),
        "--run-id",
        "pytest-examples",
    )
    assert res.returncode == 0, res.stderr.decode()
    out = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert len(out) == 2 * len(tasks)
    for rec in out:
        g = rec["grade"]
        assert rec["schema"] == "swerl.graded/1"
        assert rec["extra_field"] == [1, {"kept": True}]
        if rec["run"] == "gold":
            assert g["status"] == "resolved", (rec["id"], g["error"], g["log_tail"][-500:])
            assert g["reward"] == 1.0
            assert g["apply_method"] == "git apply --verbose"
            assert not g["tests"]["FAIL_TO_PASS"]["failure"]
        else:
            assert g["status"] == "unresolved", (rec["id"], g["error"])
            assert g["reward"] == 0.0
            assert g["tests"]["FAIL_TO_PASS"]["failure"]
    report = orjson.loads((tmp_path / "r.json").read_bytes())
    assert report["resolved_instances"] == len(tasks)
    assert report["empty_patch_instances"] == len(tasks)
    assert report["error_instances"] == 0
    assert containers("swerl.run=pytest-examples") == []


def test_non_applying_patch_is_patch_failed(toy_t: Task) -> None:
    g = grade_patch(toy_t, BAD_PATCH, GradeConfig(mode="harness"), "pytest-pf")
    assert g["status"] == "patch_failed"
    assert g["reward"] == 0.0
    assert g["patch_applied"] is False
    assert "nope.py" in g["log_tail"]
    strict = grade_patch(toy_t, BAD_PATCH, GradeConfig(), "pytest-pf")
    assert (strict["status"], strict["reward"], strict["reason"]) == ("unresolved", 0.0, "patch_failed")
    assert strict["audit"]["flagged"]
    assert "refused by git apply" in strict["audit"]["patch"]


def test_fuzzy_fallback_applies_a_shifted_patch_in_harness_mode_only(toy_t: Task) -> None:
    # A context line that does not match the file: git apply refuses, patch applies with fuzz (harness mode).
    fuzzy = toy_t.patch.replace(" def mul(a, b):", " def mul(x, y):")
    assert fuzzy != toy_t.patch
    g = grade_patch(toy_t, fuzzy, GradeConfig(mode="harness"), "pytest-fuzz")
    assert g["status"] == "resolved", g["log_tail"]
    assert g["apply_method"] in ("git apply --verbose --3way", "patch --batch --fuzz=5 -p1")
    strict = grade_patch(toy_t, fuzzy, GradeConfig(mode="strict"), "pytest-fuzz")
    assert (strict["status"], strict["reason"]) == ("unresolved", "patch_failed")


def test_untracked_files_of_the_image_are_not_the_patchs(toy: dict, tmp_path) -> None:
    """A file the image holds outside git (a build output under tests/) is not set aside for an honest patch, and a
    patch that edits it gets it set aside back to the image's copy (not removed). The test command needs it."""
    image = "swerl-test-toy:untracked"
    (tmp_path / "Dockerfile").write_text(f"FROM {toy['image']}\nRUN echo data > /testbed/tests/untracked_data.txt\n")
    built = subprocess.run(["docker", "build", "-q", "-t", image, str(tmp_path)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-1000:]
    edit = (
        "diff --git a/tests/untracked_data.txt b/tests/untracked_data.txt\n--- a/tests/untracked_data.txt\n"
        "+++ b/tests/untracked_data.txt\n@@ -1 +1 @@\n-data\n+evil\n"
    )
    try:
        task = Task(**{**_fields(Task.from_json(Located("t", 1, toy))), "image": image,
                       "test_cmd": "grep -qx data tests/untracked_data.txt && " + toy["test_cmd"]})  # fmt: skip
        g = grade_patch(task, toy["patch"], GradeConfig(), "pytest-untracked")
        assert (g["status"], g["set_aside"]) == ("resolved", []), (g["reason"], g["error"], g["log_tail"][-500:])
        g = grade_patch(task, toy["patch"] + edit, GradeConfig(), "pytest-untracked")
        assert g["set_aside"] == ["tests/untracked_data.txt"], g["log_tail"][-500:]
        assert g["status"] == "resolved", (g["reason"], g["error"], g["log_tail"][-500:])
    finally:
        subprocess.run(["docker", "rmi", "-f", image], capture_output=True)


def test_hanging_test_cmd_times_out_and_leaves_no_container(toy_t: Task) -> None:
    # the command hangs without the patch too (the control run): not the patch's fault, an error
    hang = Task(**{**_fields(toy_t), "test_cmd": "sleep 600"})
    g = grade_patch(hang, toy_t.patch, GradeConfig(timeout_s=2), "pytest-hang")
    assert (g["status"], g["reward"]) == ("error", None)
    assert g["control"]["problem"] == "timeout"
    assert containers("swerl.run=pytest-hang") == []


def test_grading_twice_gives_the_same_result(toy_t: Task) -> None:
    a = grade_patch(toy_t, toy_t.patch, GradeConfig(), "pytest-det")
    b = grade_patch(toy_t, toy_t.patch, GradeConfig(), "pytest-det")
    for g in (a, b):
        g.pop("duration_s")
        g.pop("test_duration_s")
        g["log_tail"] = g["log_tail"].split("in ")[0]  # pytest prints its own timing
    assert a == b


def _fields(t: Task) -> dict:
    return {
        k: getattr(t, k)
        for k in (
            "instance_id",
            "repo",
            "base_commit",
            "problem_statement",
            "image",
            "workdir",
            "test_cmd",
            "test_patch",
            "patch",
            "FAIL_TO_PASS",
            "PASS_TO_PASS",
            "setup",
        )
    }


# Django's runner is unittest's at verbosity 2: the same progress lines, so a unittest suite exercises the parser.
UNITTEST_CMD = """python3 - <<'EOF'
import sys, unittest
sys.path.insert(0, ".")
from calc import add, mul

class CalcTests(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(1, 2), 3)

    def test_mul(self):
        \"\"\"Multiplication still works.\"\"\"
        self.assertEqual(mul(2, 3), 6)

unittest.main(module=__name__, argv=["calc", "-v"])
EOF"""


def test_django_log_parser_grades_a_unittest_run(toy_t: Task) -> None:
    task = Task(
        **{
            **_fields(toy_t),
            "test_cmd": UNITTEST_CMD,
            "FAIL_TO_PASS": ["test_add (__main__.CalcTests.test_add)"],  # Python >= 3.11 form (bookworm base)
            "PASS_TO_PASS": ["Multiplication still works."],  # a docstring's first line is the id
        },
        extra={"log_parser": "parse_log_django"},
    )
    g = grade_patch(task, toy_t.patch, GradeConfig(), "pytest-django")
    assert (g["status"], g["log_parser"]) == ("resolved", "django"), g["log_tail"]
    unfixed = (
        "diff --git a/notes.txt b/notes.txt\nnew file mode 100644\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+x\n"
    )
    g = grade_patch(task, unfixed, GradeConfig(), "pytest-django")
    assert g["status"] == "unresolved", g["log_tail"]
    assert g["tests"]["FAIL_TO_PASS"]["failure"] == ["test_add (__main__.CalcTests.test_add)"]
    assert g["tests"]["PASS_TO_PASS"]["success"] == ["Multiplication still works."]


def test_verbose_run_without_rA_resolves_and_a_log_without_results_is_an_error(toy_t: Task) -> None:
    verbose = toy_t.test_cmd.replace("-rA ", "").replace("pytest", "pytest -v")  # SWE-smith's style of log
    task = Task(**{**_fields(toy_t), "test_cmd": verbose})
    g = grade_patch(task, toy_t.patch, GradeConfig(), "pytest-verbose")
    assert (g["status"], g["log_parser"]) == ("resolved", "guard"), g["log_tail"]
    silent = Task(**{**_fields(toy_t), "test_cmd": "echo the suite printed nothing a parser knows"})
    g = grade_patch(silent, toy_t.patch, GradeConfig(), "pytest-silent")
    assert (g["status"], g["reward"]) == ("error", None)
    assert "no test results" in g["error"]


def test_task_without_any_tests_is_refused(toy: dict, tmp_path) -> None:
    write_jsonl(tmp_path / "in.jsonl", [trajectory({**toy, "FAIL_TO_PASS": [], "PASS_TO_PASS": []}, "empty", "")])
    res = run_swerl("grade", str(tmp_path / "in.jsonl"))
    err = res.stderr.decode()
    assert res.returncode == 3
    assert res.stdout == b""
    assert "task.FAIL_TO_PASS" in err
    assert "every patch would resolve it" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_container_killed_from_outside_is_error_and_others_still_graded(toy: dict) -> None:
    victim = {**toy, "instance_id": "toy__victim-1", "test_cmd": "sleep 60"}
    recs = [Located("in", i, trajectory(t, str(i), toy["patch"])) for i, t in enumerate([toy, victim, toy])]

    def killer() -> None:
        for _ in range(300):
            ids = containers("swerl.instance=toy__victim-1")
            if ids:
                time.sleep(1.0)
                subprocess.run(["docker", "rm", "-f", *ids], capture_output=True)
                return
            time.sleep(0.1)

    th = threading.Thread(target=killer)
    th.start()
    out = list(grade_records(recs, GradeConfig(workers=3, timeout_s=120, run_id="pytest-kill")))
    th.join()
    by = {r["id"]: r["grade"] for r in out}
    assert by["toy__victim-1/1"]["status"] == "error"
    assert by["toy__victim-1/1"]["reward"] is None
    assert by["toy__victim-1/1"]["error"]
    assert by["toy__calc-1/0"]["status"] == "resolved"
    assert by["toy__calc-1/2"]["status"] == "resolved"


def test_sigint_during_parallel_grade_exits_130_and_cleans_up(toy: dict, tmp_path) -> None:
    slow = {**toy, "test_cmd": "sleep 120"}
    recs = [trajectory(toy, "fast0", toy["patch"]), *[trajectory(slow, f"slow{i}", toy["patch"]) for i in range(6)]]
    recs[1:1] = [trajectory(toy, "fast1", "")]
    write_jsonl(tmp_path / "in.jsonl", recs)
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "swerl_cli",
            "grade",
            str(tmp_path / "in.jsonl"),
            "-o",
            str(out),
            "--workers",
            "4",
            "--run-id",
            "pytest-sigint",
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not out.exists() or out.read_bytes().count(b"\n") < 2):
        time.sleep(0.2)
    assert out.read_bytes().count(b"\n") == 2
    assert containers("swerl.run=pytest-sigint")  # the slow ones are running
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # kill it here, or its Popen is reaped in a later test as an unraisable warning
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"grade did not stop within 120 s of SIGINT: {err.decode()[-2000:]}") from None
    assert proc.returncode == 130, err.decode()
    assert containers("swerl.run=pytest-sigint") == []
    lines = out.read_bytes().splitlines()
    assert len(lines) == 2
    assert {orjson.loads(line)["grade"]["status"] for line in lines} == {"resolved", "unresolved"}


def test_predictions_with_tasks_and_resume(toy: dict, tmp_path) -> None:
    write_jsonl(tmp_path / "tasks.jsonl", [toy])
    preds = [
        {"instance_id": toy["instance_id"], "model_name_or_path": "m1", "model_patch": toy["patch"]},
        {"instance_id": toy["instance_id"], "model_name_or_path": "m2", "model_patch": None},
    ]
    write_jsonl(tmp_path / "p.jsonl", preds[:1])
    out = tmp_path / "out.jsonl"
    args = ["--tasks", str(tmp_path / "tasks.jsonl"), "-o", str(out)]
    assert run_swerl("grade", str(tmp_path / "p.jsonl"), *args).returncode == 0
    write_jsonl(tmp_path / "p.jsonl", preds)
    res = run_swerl("grade", str(tmp_path / "p.jsonl"), *args, "--resume", "--report", str(tmp_path / "r.json"))
    assert res.returncode == 0, res.stderr.decode()
    rows = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [r["id"] for r in rows] == [f"{toy['instance_id']}/m1", f"{toy['instance_id']}/m2"]
    assert [r["grade"]["status"] for r in rows] == ["resolved", "unresolved"]
    report = orjson.loads((tmp_path / "r.json").read_bytes())
    assert report["resolved_ids"] == [f"{toy['instance_id']}/m1"]
    assert report["empty_patch_ids"] == [f"{toy['instance_id']}/m2"]


def test_preds_json_dict_form_is_graded(toy: dict, tmp_path) -> None:
    write_jsonl(tmp_path / "tasks.jsonl", [toy])
    pred = {"model_name_or_path": "sweagent", "instance_id": toy["instance_id"], "model_patch": "\n" + toy["patch"]}
    (tmp_path / "preds.json").write_bytes(orjson.dumps({toy["instance_id"]: pred}))
    res = run_swerl("grade", str(tmp_path / "preds.json"), "--tasks", str(tmp_path / "tasks.jsonl"))
    assert res.returncode == 0, res.stderr.decode()
    (rec,) = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert (rec["id"], rec["grade"]["status"]) == (f"{toy['instance_id']}/sweagent", "resolved")


def test_tasks_validate_marks_toy_valid(toy: dict, tmp_path) -> None:
    write_jsonl(tmp_path / "tasks.jsonl", [toy])
    res = run_swerl("tasks", "validate", str(tmp_path / "tasks.jsonl"), "--repeats", "1", "--workers", "2")
    assert res.returncode == 0, res.stderr.decode()
    (rec,) = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert rec["validation"]["valid"] is True
    assert rec["validation"]["gold_resolved"] == 1
    assert rec["validation"]["empty_resolved"] == 0
    assert rec["instance_id"] == toy["instance_id"]
