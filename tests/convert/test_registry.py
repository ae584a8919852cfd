"""The converter registry: a format registered from a test module converts through `swerl convert`."""

from __future__ import annotations

import pytest

from swerl_cli.convert import FORMATS
from tests.records import invoke_on_rows, registered

TOY = {"toy_task": "o__r-1", "prompt": "fix it", "replies": ["done"], "diff": "diff --git a/x b/x\n"}
SFT = {"instance_id": "o__r-2", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def toy():
    with registered(FORMATS, "toy-agent", "tests.convert.plugin_converter:ToyAgent"):
        yield


def _run(tmp_path, rows: list[dict], *flags: str):
    return invoke_on_rows(tmp_path, ["convert"], rows, *flags)


def test_registered_converter_is_detected_and_converts_through_the_cli(tmp_path, toy) -> None:
    res, (a, b) = _run(tmp_path, [TOY, SFT])
    assert res.exit_code == 0, res.output
    assert (a["id"], a["source"]["format"], a["patch"]) == ("o__r-1/toy-agent/0", "toy-agent", TOY["diff"])
    assert [m["role"] for m in a["messages"]] == ["system", "user", "assistant"]
    assert a["messages"][0]["content"] == "You are a toy agent."  # its own config's default
    assert b["source"]["format"] == "sft"  # the built-in formats still detect their rows


def test_registered_converter_by_name_refuses_other_rows_per_row(tmp_path, toy) -> None:
    res, rows = _run(tmp_path, [TOY, SFT], "--from", "toy-agent", "--run", "r1")
    assert res.exit_code == 4, res.output
    assert [r["id"] for r in rows] == ["o__r-1/r1/0"]
    assert "rows.jsonl:2: field 'toy_task': missing: not a toy-agent row" in res.output


def test_unknown_format_names_every_registered_converter(tmp_path, toy) -> None:
    res, _ = _run(tmp_path, [TOY], "--from", "nope")
    assert res.exit_code == 2
    assert "one of swe-agent, mini-swe-agent, openhands, sft, preds, swebench-report, toy-agent" in res.output


def test_auto_tries_the_formats_in_rank_order() -> None:
    from swerl_cli.convert.registry import converters, detect

    active = converters("auto")
    assert [c.name for c in active][:5] == ["swe-agent", "mini-swe-agent", "openhands", "sft", "preds"]
    both = {"history": [], "info": {}, "messages": []}  # SWE-agent's keys and mini's: SWE-agent wins
    assert getattr(detect(both, active), "name", None) == "swe-agent"
    assert detect({"resolved_ids": [], "unresolved_ids": []}, active) is None  # harness files are taken whole
    assert "toy-agent" not in FORMATS  # no registration leaked from the tests above
