"""Issue 43, "One line, the documented code, up front": a model directory, flag or path that cannot work is refused
before any episode, sandbox or step, with one stderr line and the documented exit code (2 usage, 3 bad input or
config, 1 runtime), through the command a user runs.

Before: an unknown model_type or a corrupt tokenizer.json gave an `error` record per episode and exit 0, a truncated
safetensors file or a bad --device a traceback, an ftp:// base URL 30 s of retries and exit 0, a bad filter rule or
policy name exit 3, `report --max-chars -1` and `dapo --follow --idle-timeout -1` were accepted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from tests.conftest import EXAMPLES, run_swerl
from tests.records import graded, jsonl

TASK_LINE = (EXAMPLES / "toy-tasks.jsonl").read_bytes().splitlines()[0] + b"\n"
TASK = orjson.loads(TASK_LINE)


def _refused(res: subprocess.CompletedProcess[bytes], command: str, code: int, *needles: str) -> str:
    """The run exited `code` with one stderr line `swerl COMMAND: ...` holding every needle, and no record."""
    err = res.stderr.decode()
    assert "Traceback" not in err, err
    assert res.returncode == code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"swerl {command}: "), err
    for needle in needles:
        assert needle in lines[0], err
    assert res.stdout == b""
    return lines[0]


@pytest.fixture
def tasks_file(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(TASK_LINE)
    return path


def _broken_model(tiny_model: Path, tmp_path: Path, how: str) -> Path:
    model = tmp_path / f"model-{how}"
    shutil.copytree(tiny_model, model)
    if how == "model_type":
        config = json.loads((model / "config.json").read_text())
        (model / "config.json").write_text(json.dumps({**config, "model_type": "no_such_architecture"}))
    elif how == "tokenizer":
        (model / "tokenizer.json").write_text('{"version": "1.0", "trunc')
    else:  # the header is whole, the tensors' bytes are cut off
        weights = model / "model.safetensors"
        os.truncate(weights, weights.stat().st_size // 2)
    return model


@pytest.mark.parametrize(
    ("how", "needle"),
    [
        ("model_type", "model_type 'no_such_architecture' is not a model type the installed transformers knows"),
        ("tokenizer", "tokenizer.json is not readable JSON"),
        ("weights", "model.safetensors is not a safetensors file (truncated: its tensors need"),
    ],
)
def test_an_unusable_model_directory_is_one_line_exit_3_before_any_episode(
    tiny_model: Path, tmp_path: Path, tasks_file: Path, how: str, needle: str
) -> None:
    model = _broken_model(tiny_model, tmp_path, how)
    out = tmp_path / "t.jsonl"
    res = run_swerl("collect", str(tasks_file), "--policy", "hf", "--model", str(model), "-o", str(out))
    _refused(res, "collect", 3, f"--model {model}: not a usable model directory", needle)
    assert not out.exists()
    # the trainers apply the same rule before any step
    res = run_swerl("rft", str(tasks_file), "--model", str(model), "--output", str(tmp_path / "ckpt"))
    _refused(res, "rft", 3, needle)
    assert not (tmp_path / "ckpt").exists()


def test_the_known_model_types_include_the_tiny_model_and_real_families(tiny_model: Path) -> None:
    """The table is read from transformers' source without importing it; a shrunk table would refuse every model."""
    from swerl_cli.core.model_dir import check_model_dir, known_model_types

    known = known_model_types()
    assert {"qwen2", "llama", "mistral", "gpt2"} <= known
    check_model_dir(str(tiny_model))  # no error


@pytest.mark.parametrize(
    ("flags", "code", "needle"),
    [
        (["--policy", "vllm", "--gpu-memory-utilization", "2"], 2, "field 'gpu_memory_utilization': a share"),
        (["--policy", "vllm", "--gpu-memory-utilization", "0"], 2, "field 'gpu_memory_utilization'"),
        (["--policy", "hf", "--device", "gpu0"], 2, "field 'device': 'gpu0' is not a device"),
        (["--policy", "hf", "--device", "cuda:x"], 2, "field 'device': 'cuda:x' is not a device"),
        (["--policy", "bogus"], 2, "field 'policy': 'bogus' is not one of openai, hf, vllm"),
        (["--base-url", "ftp://127.0.0.1/v1"], 2, "field 'base_url': 'ftp://127.0.0.1/v1' is not an http(s) URL"),
        (["--base-url", "127.0.0.1:8000/v1"], 2, "is not an http(s) URL"),
        ([], 2, "the openai policy (the default --policy) needs --base-url URL"),
    ],
)
def test_collect_refuses_a_policy_setting_that_cannot_work_at_once(
    tiny_model: Path, tmp_path: Path, tasks_file: Path, flags: list[str], code: int, needle: str
) -> None:
    model = ["--model", str(tiny_model)] if "--policy" in flags and "bogus" not in flags else []
    out = tmp_path / "t.jsonl"
    t0 = time.monotonic()
    res = run_swerl("collect", str(tasks_file), *flags, *model, "-o", str(out), timeout=120)
    _refused(res, "collect", code, needle)
    assert time.monotonic() - t0 < 30  # the ftp:// URL was retried for 33 s
    assert not out.exists()


def test_collect_device_cuda_without_cuda_is_one_line_exit_1(tiny_model: Path, tasks_file: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    res = run_swerl("collect", str(tasks_file), "--policy", "hf", "--model", str(tiny_model), "--device", "cuda")
    _refused(res, "collect", 1, "--device cuda: this machine has no CUDA device usable by torch")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["filter", "-", "--solve-rate", "nan:1"], "--solve-rate: need 0 <= LO <= HI <= 1"),
        (["filter", "-", "--per-task", "-1"], "--per-task: must be >= 1"),
        (["tasks", "validate", "-", "-r", "0"], "--repeats must be >= 1; got 0"),
        (["tasks", "build", "-", "--network", "bogus"], "--network must be none or host; got 'bogus'"),
        (["dapo", "-"], "--model CKPT_k and --output CKPT_k+1 are both required"),
        (["filter", "-", "-o", ""], "--output: the path is empty ('')"),
        (["collect", "-", "-o", ""], "--output: the path is empty (''): give a file name; leave the flag out"),
        (["grade", "-", "--report", ""], "--report: the path is empty"),
    ],
)
def test_usage_errors_exit_2(args: list[str], needle: str) -> None:
    res = run_swerl(*args, input=b"")
    _refused(res, " ".join(args[: 2 if args[0] == "tasks" else 1]), 2, needle)


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--max-chars", "-1"], "--max-chars: must be >= 0"),
        (["--l-thr", "-5"], "--l-thr: must be >= 0"),
        (["--t-max", "0"], "--t-max: must be >= 1"),
        (["--l-thr", "20", "--t-max", "20"], "--t-max 20 must exceed --l-thr 20"),
    ],
)
def test_report_refuses_nonsensical_numbers(tmp_path: Path, flags: list[str], needle: str) -> None:
    src = tmp_path / "g.jsonl"
    src.write_bytes(jsonl([graded("a", 0, True)]))
    page = tmp_path / "r.html"
    res = run_swerl("report", str(src), "-o", str(page), *flags)
    _refused(res, "report", 2, needle)
    assert not page.exists()


def test_report_names_a_fifo_instead_of_calling_it_missing(tmp_path: Path) -> None:
    fifo = tmp_path / "graded.fifo"
    os.mkfifo(fifo)
    res = run_swerl("report", str(fifo), "-o", str(tmp_path / "r.html"), timeout=60)
    _refused(res, "report", 3, f"{fifo}: is a FIFO, not a graded JSONL file or a run directory ('-' reads stdin)")


def test_dapo_follow_refuses_a_negative_idle_timeout(tiny_model: Path, tmp_path: Path) -> None:
    """It was accepted: with a FIFO or a growing file the trainer would wait forever."""
    res = run_swerl(
        "dapo", "--follow", "-", "--model", str(tiny_model), "-o", str(tmp_path / "run"), "--idle-timeout", "-1"
    )
    _refused(res, "dapo", 2, "--idle-timeout: must be >= 0; got -1.0")
    assert not (tmp_path / "run").exists()


def _failed_episode() -> dict:
    """A trajectory whose episode failed: grade decides it without a sandbox."""
    iid = TASK["instance_id"]
    return {
        "schema": "swerl.trajectory/1",
        "id": f"{iid}/r/0",
        "instance_id": iid,
        "run": "r",
        "sample": 0,
        "task": TASK,
        "patch": "",
        "exit_status": "error",
        "error": "policy down",
    }


@pytest.mark.parametrize("where", ["dir", "under_a_file"])
def test_grade_refuses_a_report_path_it_cannot_write_before_grading(tmp_path: Path, where: str) -> None:
    src = tmp_path / "traj.jsonl"
    src.write_bytes(jsonl([_failed_episode()]))
    report = tmp_path if where == "dir" else src / "report.json"
    out = tmp_path / "graded.jsonl"
    res = run_swerl("grade", str(src), "-o", str(out), "--report", str(report))
    needle = "is a directory; give a file name" if where == "dir" else f"{src} is not a directory"
    _refused(res, "grade", 2, f"--report {report}: {needle}")
    assert not out.exists()  # nothing was graded


def test_tasks_validate_refuses_a_task_listed_twice_before_any_sandbox(tmp_path: Path) -> None:
    """It validated the task twice and wrote it twice; the duplicate-id rule of every reader now applies."""
    src = tmp_path / "tasks.jsonl"
    src.write_bytes(TASK_LINE * 2)
    out = tmp_path / "v.jsonl"
    res = run_swerl("tasks", "validate", str(src), "-r", "1", "-o", str(out))
    iid = TASK["instance_id"]
    _refused(res, "tasks validate", 3, f"{src}:2: field 'instance_id': duplicate instance_id '{iid}', first at {src}:1")
    assert not out.exists()


def test_convert_from_swerl_keeps_every_good_record_and_exits_4(tmp_path: Path) -> None:
    """It stopped at the first unusable record (exit 3), losing the good ones after it; docs/cli.md documents exit 4
    with one stderr line per unusable row, as for every other --from format."""
    src = tmp_path / "graded.jsonl"
    good = [graded("a", 0, True, policy={"model": "m"}), graded("b", 0, False, policy={"model": "m"})]
    src.write_bytes(jsonl([good[0]]) + b'{"schema": "swerl.graded/1", "id": "x/r1/0"}\nnot json\n' + jsonl([good[1]]))
    out = tmp_path / "preds.jsonl"
    res = run_swerl("convert", "--from", "swerl", "--to", "swebench-preds", str(src), "-o", str(out))
    err = res.stderr.decode().strip().splitlines()
    assert res.returncode == 4, err
    assert [orjson.loads(x)["instance_id"] for x in out.read_bytes().splitlines()] == ["a", "b"]
    assert err[0] == f"swerl convert: {src}:2: field 'instance_id': missing"
    assert err[1].startswith(f"swerl convert: {src}:3: not valid JSON")
    assert err[-1] == "swerl convert: 2 predictions written, 2 skipped"
    res = run_swerl(
        "convert", "--from", "swerl", "--to", "swebench-preds", str(src), "-o", str(tmp_path / "s.jsonl"), "--strict"
    )
    _refused(res, "convert", 3, f"{src}:2: field 'instance_id': missing")
    assert not (tmp_path / "s.jsonl").exists()
