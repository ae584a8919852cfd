"""`swerl convert`: each source format on fixtures written in that format, auto-detection, broken inputs, and
swerl records out to SWE-bench predictions (graded back through `swerl grade`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swerl_cli.agent.tools import parse_text_action, parse_tool_calls
from swerl_cli.convert import convert_paths
from swerl_cli.core.errors import InputError
from tests.conftest import EXAMPLES, run_swerl

FIX = Path(__file__).parent / "fixtures"


def _one(name: str, fmt: str = "auto") -> dict:
    out = list(convert_paths([str(FIX / name)], fmt))
    assert len(out) == 1
    assert not isinstance(out[0], InputError), out
    return out[0]


def test_convert_swe_agent_legacy_history_becomes_swerl_text_actions() -> None:
    rec = _one("swerl-examples__bizdays-1.traj", "swe-agent")
    assert rec["id"] == "swerl-examples__bizdays-1/swe-agent/0"
    assert [m["role"] for m in rec["messages"]] == ["system", "user", "assistant", "user", "assistant"]  # demo dropped
    actions = [parse_text_action(m["content"]) for m in rec["messages"] if m["role"] == "assistant"]
    assert [a.command for a in actions] == ["ls -F", "submit"]
    assert actions[0].is_submit is False
    assert actions[1].is_submit
    assert rec["patch"].startswith("diff --git a/bizdays/count.py")
    assert (rec["exit_status"], rec["exit_status_raw"]) == ("submitted", "submitted")
    assert rec["stats"] == {
        "turns": 2,
        "tokens_prompt": 3210,
        "tokens_generated": 95,
        "api_calls": 2,
        "cost_usd": 0.0123,
    }
    assert rec["source"] == {"format": "swe-agent", "file": str(FIX / "swerl-examples__bizdays-1.traj"), "line": None}
    assert rec["schema"] == "swerl.trajectory/1"
    assert rec["turns"] == []
    assert "task" not in rec


def test_convert_function_calling_traj_keeps_several_calls_per_turn_and_their_ids() -> None:
    rec = _one("swerl-examples__memo-1.traj")
    msgs = rec["messages"]
    calls = msgs[2]["tool_calls"]
    assert [c["id"] for c in calls] == ["toolu_01", "toolu_02", "toolu_03"]
    assert [c["function"]["name"] for c in calls] == ["execute", "str_replace_editor", "execute"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"command": "grep -rn weekday bizdays"}
    assert [m.get("tool_call_id") for m in msgs[3:6]] == ["toolu_01", "toolu_02", "toolu_03"]
    assert msgs[3]["content"] == "bizdays/count.py:3:    first = start.weekday()"  # parts flattened to text
    assert parse_tool_calls(msgs[6]["tool_calls"]).is_submit  # SWE-agent's submit tool -> swerl's submit
    assert rec["policy"]["model"] == "claude-sonnet-4-20250514"
    assert rec["policy"]["actions"] == {"rewritten": 3, "kept": 1, "foreign_tools": ["str_replace_editor"]}
    # autosubmission after the cost limit: the limit is the exit status, the patch is kept
    assert (rec["exit_status"], rec["exit_status_raw"]) == ("max_turns", "submitted (exit_cost)")
    assert rec["patch"]


def test_convert_mini_swe_agent_tool_calls_text_mode_and_exit_message() -> None:
    rec = _one("swerl-examples__pagesel-1.traj.json", "mini-swe-agent")
    assert [m["role"] for m in rec["messages"]] == ["system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    assert all("extra" not in m for m in rec["messages"])
    assert [c["id"] for c in rec["messages"][2]["tool_calls"]] == ["toolu_10", "toolu_11"]
    assert rec["policy"]["model"] == "gpt-5-mini"
    assert rec["exit_status"] == "submitted"
    text = _one("swerl-examples__tinycsv-1.traj.json")
    assert parse_text_action(text["messages"][2]["content"]).command == "ls -la"
    assert text["messages"][2]["content"].startswith("THOUGHT: look first.")
    assert (text["exit_status"], text["exit_status_raw"], text["patch"]) == ("max_turns", "LimitsExceeded", "")


def test_convert_openhands_v1_parallel_calls_and_v0_events() -> None:
    v1, v0 = convert_paths([str(FIX / "output.jsonl")], "openhands")
    roles = [m["role"] for m in v1["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    assert [c["id"] for c in v1["messages"][2]["tool_calls"]] == ["c1", "c2"]  # one reply, two calls
    assert v1["messages"][2]["content"] == "Look at two files."
    assert v1["patch"].startswith("diff --git")
    assert v1["exit_status"] == "submitted"
    assert v1["source"]["line"] == 1
    assert v1["stats"]["tokens_prompt"] == 5000
    assert v0["messages"][1]["tool_calls"][0]["function"]["name"] == "execute"
    assert v0["messages"][2] == {"role": "tool", "content": "verscmp\n", "tool_call_id": "t1"}
    assert v0["exit_status"] == "max_turns"
    assert v0["error"] is None
    assert v0["patch"] == ""


def test_convert_sft_rows_rewrites_text_calls_and_reports_bad_rows() -> None:
    out = list(convert_paths([str(FIX / "ft_rows.jsonl")], "auto"))
    good = [r for r in out if not isinstance(r, InputError)]
    errors = [str(e) for e in out if isinstance(e, InputError)]
    assert [r["instance_id"] for r in good] == ["swerl-examples__depsolve-1", "swerl-examples__wordwrap-1"]
    cmds = [parse_text_action(m["content"]).command for m in good[0]["messages"] if m["role"] == "assistant"]
    assert cmds == ["grep -n cycle depsolve/*.py", "submit"]
    assert good[1]["policy"]["actions"]["foreign_tools"] == ["str_replace_editor"]
    assert errors == [
        f"{FIX / 'ft_rows.jsonl'}:2: field 'instance_id': missing: an SFT row needs 'instance_id' to name its task",
        f"{FIX / 'ft_rows.jsonl'}:4: truncated last line (no newline, not valid JSON)",
    ]


def test_convert_cli_directory_auto_tasks_and_one_line_per_broken_file(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes((EXAMPLES / "tasks.jsonl").read_bytes())
    res = run_swerl("convert", str(FIX), "--tasks", str(tasks), "-o", str(out))
    err = res.stderr.decode().strip().splitlines()
    assert res.returncode == 4, err  # every usable trajectory is written; the exit code says some input was not
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(recs) == 8
    assert {r["source"]["format"] for r in recs} == {"swe-agent", "mini-swe-agent", "openhands", "sft"}
    assert all(r["task"]["instance_id"] == r["instance_id"] for r in recs)
    assert err[-1] == "swerl convert: 8 trajectories written, 3 skipped"
    assert f"swerl convert: {FIX / 'truncated.traj'}: truncated: the JSON document ends early" in err[2]
    assert "Traceback" not in res.stderr.decode()
    # --strict stops at the first unusable input, exit 3, and the -o file keeps its previous content
    before = out.read_bytes()
    res = run_swerl("convert", str(FIX), "--strict", "-o", str(out))
    assert res.returncode == 3
    assert out.read_bytes() == before
    assert res.stderr.decode().strip().splitlines() == [
        f"swerl convert: {FIX / 'ft_rows.jsonl'}:2: field 'instance_id': missing: an SFT row needs 'instance_id' "
        "to name its task"
    ]
    # converted records are valid input of filter (pass-through of every field)
    res = run_swerl("filter", str(out), "--where", 'exit_status == "submitted" and policy.action_format == "tools"')
    assert res.returncode == 0, res.stderr.decode()
    assert sorted(json.loads(line)["id"] for line in res.stdout.splitlines()) == [
        "swerl-examples__envcfg-1/openhands/0",
        "swerl-examples__pagesel-1/mini-swe-agent/0",
    ]


def test_convert_unknown_format_names_the_file(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text('{"foo": 1}')
    (err,) = convert_paths([str(odd)])
    assert isinstance(err, InputError)
    formats = "swe-agent|mini-swe-agent|openhands|sft|preds|swebench-report"
    assert str(err) == f"{odd}: unknown format (top-level keys ['foo']); pass --from {formats}"


@pytest.mark.train
def test_converted_trajectories_rerender_for_rft(tiny_model: Path) -> None:
    from transformers import AutoTokenizer

    from swerl_cli.streams.records import Located
    from swerl_cli.training.data import load_samples

    tok = AutoTokenizer.from_pretrained(tiny_model)
    recs = [r for r in convert_paths([str(FIX)]) if not isinstance(r, InputError)]
    samples, stats = load_samples([Located("c", i, r) for i, r in enumerate(recs, 1)], tok, max_seq_len=100_000)
    assert stats.samples == stats.rerendered == len(recs) == 8
    for s in samples:  # loss only on assistant spans: each trained span decodes to text of an assistant message
        trained = tok.decode([t for t, m in zip(s.input_ids, s.loss_mask, strict=True) if m])
        assert "OBSERVATION" not in trained
        assert "<uploaded_files>" not in trained
        assert 0 < s.n_trainable < len(s)


@pytest.mark.docker
def test_convert_to_swebench_preds_round_trips_through_grade(tmp_path: Path) -> None:
    task = json.loads((EXAMPLES / "tasks.jsonl").read_text().splitlines()[0])
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    base = {"schema": "swerl.trajectory/1", "instance_id": task["instance_id"], "policy": {"model": "org/m"}}
    trajs = tmp_path / "trajs.jsonl"
    trajs.write_text(json.dumps({**base, "patch": task["patch"]}) + "\n")
    preds = tmp_path / "preds.jsonl"
    res = run_swerl("convert", "--from", "swerl", "--to", "swebench-preds", str(trajs), "-o", str(preds))
    assert res.returncode == 0, res.stderr.decode()
    (pred,) = [json.loads(line) for line in preds.read_text().splitlines()]
    assert pred == {"instance_id": task["instance_id"], "model_name_or_path": "org/m", "model_patch": task["patch"]}
    # the empty-patch prediction of another "model", in the dict form the harness also reads
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({**base, "patch": None}) + "\n")
    pj = tmp_path / "preds.json"
    res = run_swerl(
        "convert", "--from", "swerl", "--to", "preds-json", str(empty), "--model-name", "none", "-o", str(pj)
    )
    assert res.returncode == 0, res.stderr.decode()
    as_dict = json.loads(pj.read_text())
    assert as_dict == {
        task["instance_id"]: {"instance_id": task["instance_id"], "model_name_or_path": "none", "model_patch": ""}
    }
    rows = preds.read_text() + json.dumps(as_dict[task["instance_id"]]) + "\n"
    res = run_swerl("grade", "--tasks", str(tasks), "--workers", "2", input=rows.encode())
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    verdicts = {
        json.loads(line)["model_name_or_path"]: json.loads(line)["grade"]["resolved"]
        for line in res.stdout.splitlines()
    }
    assert verdicts == {"org/m": True, "none": False}


def test_convert_preds_refuses_two_samples_of_one_instance(tmp_path: Path) -> None:
    rec = {"schema": "swerl.trajectory/1", "instance_id": "a__b-1", "run": "r", "patch": "x"}
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps(rec) + "\n" + json.dumps(rec) + "\n")
    res = run_swerl("convert", "--from", "swerl", "--to", "swebench-preds", str(src))
    assert res.returncode == 3
    assert res.stderr.decode().startswith(f"swerl convert: {src}:2: field 'instance_id': 'a__b-1' already came from")


@pytest.mark.docker
def test_converted_trajectory_with_its_task_grades_directly(tmp_path: Path) -> None:
    task = json.loads((EXAMPLES / "tasks.jsonl").read_text().splitlines()[0])
    traj = json.loads((FIX / "swerl-examples__bizdays-1.traj").read_text())
    traj["info"]["submission"] = task["patch"]  # the source agent submitted the real fix
    src = tmp_path / f"{task['instance_id']}.traj"
    src.write_text(json.dumps(traj, indent=2))
    converted = run_swerl("convert", str(src), "--tasks", str(EXAMPLES / "tasks.jsonl"))
    assert converted.returncode == 0, converted.stderr.decode()
    graded = run_swerl("grade", input=converted.stdout)
    assert graded.returncode == 0, graded.stderr.decode()[-2000:]
    (rec,) = [json.loads(line) for line in graded.stdout.splitlines()]
    assert rec["id"] == f"{task['instance_id']}/swe-agent/0"
    assert rec["grade"]["status"] == "resolved"
    assert rec["source"]["format"] == "swe-agent"  # the converter's fields pass through grade


def test_actions_keep_leaves_the_source_calls_and_exit_statuses_map() -> None:
    from swerl_cli.convert.common import map_exit_status

    (rec,) = convert_paths([str(FIX / "swerl-examples__memo-1.traj")], rewrite=False)
    names = [c["function"]["name"] for c in rec["messages"][2]["tool_calls"]]
    assert names == ["bash", "str_replace_editor", "bash"]
    assert rec["policy"]["actions"] == {
        "rewritten": 0,
        "kept": 4,
        "foreign_tools": ["bash", "str_replace_editor", "submit"],
    }
    got = [map_exit_status(s) for s in ("submitted (exit_context)", "exit_format", "TimeExceeded", "exit_api", "new")]
    assert got == ["context_limit", "format_errors", "timeout", "error", "error"]
