"""filter_stream: record rules, group rules on grouped and ungrouped input, byte-for-byte pass-through."""

from __future__ import annotations

from pathlib import Path

import pytest

from swerl_cli.core.errors import ConfigError, InputError
from swerl_cli.filtering.select import FilterSpec, filter_stream, parse_solve_rate
from tests.conftest import run_swerl
from tests.records import graded, ids, jsonl

# Task a: mixed (2 of 3 resolved, two identical patches); b: all fail; c: all pass; d: 1 of 4 plus an infra error.
GROUPED = [
    graded("a", 0, True, patch="P1"),
    graded("a", 1, False, patch="P2", turns=50),
    graded("a", 2, True, patch="P1"),
    graded("b", 0, False),
    graded("b", 1, False),
    graded("c", 0, True),
    graded("c", 1, True),
    graded("d", 0, True),
    graded("d", 1, False),
    graded("d", 2, False, status="error"),
    graded("d", 3, False),
    graded("d", 4, False),
]


def _run(tmp_path: Path, records: list[dict], **spec) -> list[str]:
    src = tmp_path / "in.jsonl"
    src.write_bytes(jsonl(records))
    out: list[bytes] = []
    filter_stream(str(src), FilterSpec(**spec), out.append)
    return ids(b"".join(out))


def _shuffled() -> list[dict]:
    # Interleave groups so every key reappears after another group started.
    order = [0, 3, 5, 7, 1, 4, 6, 8, 2, 9, 10, 11]
    return [GROUPED[i] for i in order]


@pytest.mark.parametrize("records", [GROUPED, _shuffled()], ids=["grouped", "unsorted"])
def test_filter_group_mixed_keeps_groups_with_unequal_rewards(tmp_path: Path, records: list[dict]) -> None:
    kept = _run(tmp_path, records, group_mixed=True)
    expected = [r["id"] for r in records if r["instance_id"] in ("a", "d")]
    assert kept == expected  # input order preserved; the infra error (null reward) rides along in group d


@pytest.mark.parametrize("records", [GROUPED, _shuffled()], ids=["grouped", "unsorted"])
def test_filter_solve_rate_excludes_infra_errors_and_is_inclusive(tmp_path: Path, records: list[dict]) -> None:
    # d: 1 resolved of 4 graded (the error is excluded) = 0.25 -> inside [0.25, 0.7]; a = 2/3 inside; b = 0, c = 1 out.
    kept = _run(tmp_path, records, solve_rate=(0.25, 0.7))
    assert kept == [r["id"] for r in records if r["instance_id"] in ("a", "d")]


@pytest.mark.parametrize("records", [GROUPED, _shuffled()], ids=["grouped", "unsorted"])
def test_filter_dedupe_and_per_task(tmp_path: Path, records: list[dict]) -> None:
    assert "a/r1/2" not in _run(tmp_path, records, dedupe=True)
    assert len(_run(tmp_path, records, dedupe=True)) == len(records) - 1
    kept = _run(tmp_path, records, per_task=1)
    assert kept == [r["id"] for r in records if r["sample"] == 0]


def test_filter_group_stats_use_every_record_before_record_rules(tmp_path: Path) -> None:
    kept = _run(tmp_path, GROUPED, solve_rate=(0.2, 0.8), resolved=True)
    assert kept == ["a/r1/0", "a/r1/2", "d/r1/0"]


def test_filter_groups_are_per_run(tmp_path: Path) -> None:
    records = [graded("a", 0, True, run="r1"), graded("a", 0, False, run="r2"), graded("a", 1, False, run="r1")]
    assert _run(tmp_path, records, group_mixed=True) == ["a/r1/0", "a/r1/1"]


def test_filter_group_mixed_reward_field_option(tmp_path: Path) -> None:
    records = [graded("a", 0, True, score={"v": 1}), graded("a", 1, True, score={"v": 2})]
    assert _run(tmp_path, records, group_mixed=True) == []
    assert _run(tmp_path, records, group_mixed=True, reward_field="score.v") == ["a/r1/0", "a/r1/1"]


def test_filter_record_rules(tmp_path: Path) -> None:
    assert _run(tmp_path, GROUPED, max_turns=10, status=("unresolved",)) == [
        "b/r1/0",
        "b/r1/1",
        "d/r1/1",
        "d/r1/3",
        "d/r1/4",
    ]
    assert _run(tmp_path, GROUPED, min_reward=0.5) == ["a/r1/0", "a/r1/2", "c/r1/0", "c/r1/1", "d/r1/0"]
    assert "d/r1/2" not in _run(tmp_path, GROUPED, min_reward=0.0)  # null reward never passes
    assert _run(tmp_path, GROUPED, exit_status=("max_turns",)) == []
    assert len(_run(tmp_path, GROUPED, resolved=False)) == 7
    assert _run(tmp_path, GROUPED, where='instance_id == "c" or stats.turns > 40') == ["a/r1/1", "c/r1/0", "c/r1/1"]


def test_filter_grouped_flag_rejects_a_reappearing_group(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        _run(tmp_path, _shuffled(), group_mixed=True, grouped=True)
    assert "in.jsonl:5" in str(info.value)
    assert "reappears" in str(info.value)


def test_filter_type_error_in_rule_field_is_located(tmp_path: Path) -> None:
    records = [graded("a", 0, True), graded("a", 1, True)]
    records[1]["stats"]["turns"] = "many"
    with pytest.raises(InputError) as info:
        _run(tmp_path, records, max_turns=3)
    assert str(info.value) == f"{tmp_path / 'in.jsonl'}:2: field 'stats.turns': expected int, got \"many\""
    records[1]["stats"]["turns"] = 2
    del records[1]["instance_id"]
    with pytest.raises(InputError, match=r":2: field 'instance_id': missing"):
        _run(tmp_path, records, per_task=1)


def test_filter_spec_validation() -> None:
    with pytest.raises(ConfigError, match="--status"):
        FilterSpec(status=("done",))
    with pytest.raises(ConfigError, match="--solve-rate"):
        FilterSpec(solve_rate=(0.8, 0.2))
    with pytest.raises(ConfigError, match="--per-task"):
        FilterSpec(per_task=0)
    with pytest.raises(ConfigError, match="column"):
        FilterSpec(where="a ==")
    assert parse_solve_rate("0:1") == (0.0, 1.0)
    with pytest.raises(ConfigError):
        parse_solve_rate("half")


def test_filter_cli_passes_unknown_fields_byte_for_byte(tmp_path: Path) -> None:
    # Odd spacing, key order, unicode, big ints and float spellings must survive untouched.
    line1 = (
        b'{"zeta": 1.50, "instance_id":"a",  "grade": {"resolved": true, "status":"resolved", "reward": 1e0},'
        b' "big": 123456789012345678901234567890, "s": "\\u00e9\xc3\xa9"}\n'
    )
    line2 = b'{"instance_id":"a","grade":{"resolved":false,"status":"unresolved","reward":0}}\n'
    src = tmp_path / "in.jsonl"
    src.write_bytes(line1 + line2)
    res = run_swerl("filter", str(src), "--resolved")
    assert res.returncode == 0, res.stderr
    assert res.stdout == line1
    assert res.stderr.decode().strip() == "filter: kept 1 of 2"
    res = run_swerl("filter", "-", "--group-mixed", "--quiet", input=line1 + line2)
    assert res.stdout == line1 + line2
    assert res.stderr == b""


def test_filter_cli_unsorted_stdin_two_pass(tmp_path: Path) -> None:
    res = run_swerl("filter", "--group-mixed", "--dedupe", input=jsonl(_shuffled()))
    assert res.returncode == 0, res.stderr
    expected = [r["id"] for r in _shuffled() if r["instance_id"] in ("a", "d") and r["id"] != "a/r1/2"]
    assert ids(res.stdout) == expected
    assert "two passes" in res.stderr.decode()


def test_filter_cli_reads_gzip_and_writes_atomically(tmp_path: Path) -> None:
    import gzip

    src = tmp_path / "in.jsonl.gz"
    src.write_bytes(gzip.compress(jsonl(GROUPED)))
    out = tmp_path / "sub" / "out.jsonl"
    res = run_swerl("filter", str(src), "--resolved", "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert res.stdout == b""
    assert ids(out.read_bytes()) == ["a/r1/0", "a/r1/2", "c/r1/0", "c/r1/1", "d/r1/0"]
    assert [p.name for p in out.parent.iterdir()] == ["out.jsonl"]  # no temp file left behind
