"""The one graded-record reader (streams/graded.py) and the one group definition, shared by eval, report, filter
and dapo: the same record reads the same everywhere, and filter and dapo put the same records in the same groups."""

from __future__ import annotations

from pathlib import Path

import pytest

from swerl_cli.core.errors import InputError
from swerl_cli.filtering.select import FilterSpec, filter_stream
from swerl_cli.streams.graded import group_key, read_graded
from swerl_cli.streams.records import Located
from swerl_cli.training.advantages import select_samples
from swerl_cli.training.dapo_config import DapoConfig
from tests.conftest import run_swerl
from tests.records import graded, ids, jsonl, located, rollout


def test_read_graded_types_every_field_users_read() -> None:
    rec = rollout("A", 3, run="iter-1", resolved=True, turns=4, exit_status="max_turns", version="v7")
    rec["grade"].update(reason=None, set_aside=["conftest.py"], duration_s=1.5)
    rec["stats"]["wall_s"] = 2
    g = read_graded(Located("g.jsonl", 9, rec))
    assert (g.id, g.instance_id, g.run, g.sample, g.group) == ("A/iter-1/3", "A", "iter-1", 3, ("iter-1", "A"))
    assert (g.status, g.resolved, g.reward, g.test_reward, g.set_aside) == ("resolved", True, 1.0, 1.0, True)
    assert (g.turns, g.tokens, g.wall_s, g.grade_s, g.repo) == (4, 1000, 2, 1.5, "acme/w")
    assert (g.exit_status, g.policy_version, g.is_error, g.is_collect_error) == ("max_turns", "v7", False, False)
    bare = read_graded(Located("g.jsonl", 1, {"instance_id": "B", "grade": {"status": "error", "resolved": False}}))
    assert (bare.run, bare.sample, bare.turns, bare.group, bare.is_error) == (None, None, None, (None, "B"), True)
    with pytest.raises(InputError, match=r"^g.jsonl:1: field 'stats.turns': missing$"):
        bare.need("turns")
    detached = bare.detached()
    assert (detached.loc.obj, detached.loc.line, detached.instance_id) == (None, 1, "B")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"grade": {"status": "resolved", "resolved": 1}}, "field 'grade.resolved': expected bool, got 1"),
        ({"grade": {"status": "fine", "resolved": True}}, "field 'grade.status': unknown status 'fine'; expected one"),
        ({"run": [1]}, "field 'run': expected string or int, got [1]"),
        ({"stats": {"turns": "many"}}, "field 'stats.turns': expected int, got \"many\""),
        ({"schema": "swerl.task/1"}, "field 'schema': expected a swerl.graded record, got 'swerl.task/1'"),
    ],
)
def test_eval_report_and_dapo_refuse_a_bad_record_with_the_same_line(
    tmp_path: Path, change: dict, message: str
) -> None:
    """Before: three parsers, e.g. `eval` read any schema tag, dapo accepted an unknown grade.status."""
    recs = [rollout("A", 0, resolved=True), {**rollout("A", 1), **change}]
    src = tmp_path / "g.jsonl"
    src.write_bytes(jsonl(recs))
    want = f"{src}:2: {message}"
    with pytest.raises(InputError) as info:
        select_samples(located(recs, str(src)), DapoConfig())
    assert str(info.value).startswith(want)
    for args in (["eval", str(src)], ["report", str(src), "-o", str(tmp_path / "r.html")]):
        res = run_swerl(*args)
        assert res.returncode == 3, res.stderr
        lines = res.stderr.decode().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"swerl {args[0]}: {want}"), lines


def test_group_key_compares_the_run_as_text() -> None:
    """run 1 and "1" are one group, as the record id `{instance_id}/{run}/{sample}` writes them both."""
    a, b = Located("f", 1, {"instance_id": "A", "run": 1}), Located("f", 2, {"instance_id": "A", "run": "1"})
    assert group_key(a) == group_key(b) == ("1", "A")
    assert group_key(Located("f", 3, {"instance_id": "A"})) == (None, "A")  # no run: its own group
    with pytest.raises(InputError, match="f:4: field 'run': expected string or int, got true"):
        group_key(Located("f", 4, {"instance_id": "A", "run": True}))


# Runs written two ways (int and string) and groups of every kind: mixed, all-pass, all-fail, a single sample.
RUNS = [
    (1, "A", 0, True),
    ("1", "A", 1, False),
    ("1", "A", 2, False),
    (2, "A", 0, True),
    ("2", "A", 1, True),
    (1, "B", 0, False),
    ("1", "B", 1, False),
    ("x", "B", 0, True),
    ("x", "B", 1, False),
    (3, "C", 0, True),
    ("3", "C", 1, False),
    ("y", "C", 0, True),
]


@pytest.mark.parametrize("order", [list(range(len(RUNS))), [11, 3, 0, 9, 5, 1, 7, 10, 2, 8, 4, 6]])
def test_filter_and_dapo_group_the_same_records_identically(tmp_path: Path, order: list[int]) -> None:
    """A group survives filter --group-mixed exactly when dapo gives its samples non-zero advantages (binary rewards,
    no step penalty). Before: filter kept run 1 and "1" apart (groups A/1 and C/3 were dropped) and dapo merged
    them (and kept A/1 and C/3)."""
    recs = [rollout(iid, s, run=run, resolved=ok) for run, iid, s, ok in (RUNS[i] for i in order)]
    src = tmp_path / "g.jsonl"
    src.write_bytes(jsonl(recs))
    out: list[bytes] = []
    filter_stream(str(src), FilterSpec(group_mixed=True), out.append)
    by_filter = set(ids(b"".join(out)))
    sel = select_samples(located(recs), DapoConfig())
    by_dapo = {s.loc.obj["id"] for s in sel.samples}
    assert by_filter == by_dapo == {"A/1/0", "A/1/1", "A/1/2", "B/x/0", "B/x/1", "C/3/0", "C/3/1"}
    assert sel.counts["groups"] == 6  # A/1, A/2, B/1, B/x, C/3, C/y
    res = run_swerl("filter", str(src), "--group-mixed")  # the CLI a user runs, default flags otherwise
    assert res.returncode == 0, res.stderr
    assert set(ids(res.stdout)) == by_dapo


def test_filter_groups_run_1_and_1_as_text_for_per_task(tmp_path: Path) -> None:
    recs = [graded("A", 0, True, run=1), graded("A", 1, True, run="1"), graded("A", 2, True, run="2")]
    src = tmp_path / "g.jsonl"
    src.write_bytes(jsonl(recs))
    out: list[bytes] = []
    filter_stream(str(src), FilterSpec(per_task=1), out.append)
    assert ids(b"".join(out)) == ["A/1/0", "A/2/2"]
