"""`swerl dapo --follow`'s stream pieces, without a model: tailing a growing file, grouping, aging groups in
optimizer steps by the versions that sampled their turns, dropping the stale ones."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from swerl_cli.streams.records import Located
from swerl_cli.training.follow import FollowOptions, FollowState, _take_batch
from swerl_cli.training.follow_stream import GroupBuffer, group_step, record_id, tail_records
from tests.records import rollout


def _loc(rec: dict, n: int = 1) -> Located:
    return Located("g.jsonl", n, rec)


def test_tail_waits_for_appended_lines_and_half_written_ones(tmp_path: Path):
    path = tmp_path / "g.jsonl"
    path.write_bytes(b"")
    recs = [rollout("A", i) for i in range(3)]

    def writer() -> None:
        with open(path, "ab") as fh:
            for r in recs:
                raw = json.dumps(r).encode() + b"\n"
                fh.write(raw[:10])  # half a line: must not be parsed yet
                fh.flush()
                time.sleep(0.15)
                fh.write(raw[10:])
                fh.flush()
                time.sleep(0.1)

    t = threading.Thread(target=writer)
    t.start()
    got = [loc.obj["sample"] for loc in tail_records(str(path), poll_s=0.02, idle_timeout_s=1.0)]
    t.join()
    assert got == [0, 1, 2]


def test_group_buffer_forms_complete_groups_and_skips_consumed_records():
    recs = [rollout("A", 0), rollout("B", 0), rollout("A", 1), rollout("B", 1), rollout("C", 0)]
    consumed = {record_id(_loc(rollout("B", 0)))}
    buf = GroupBuffer(2, consumed)
    for r in recs:
        buf.add(_loc(r))
    assert [[m.obj["instance_id"] for m in g] for g in buf.ready] == [["A", "A"]]
    assert buf.skipped == 1
    assert set(buf.open) == {("iter-0", "B"), ("iter-0", "C")}


def test_a_group_ages_from_its_oldest_turn_version():
    versions = {"ckpt-0": 0, "ckpt-1": 3, "ckpt-2": 5}
    a, b = rollout("A", 0, turns=2), rollout("A", 1, turns=2)
    a["turns"][0]["policy_version"], a["turns"][1]["policy_version"] = "ckpt-1", "ckpt-2"  # an update between turns
    b["turns"][0]["policy_version"] = b["turns"][1]["policy_version"] = "ckpt-2"
    assert group_step([_loc(b)], versions) == 5
    assert group_step([_loc(a), _loc(b)], versions) == 3
    # no turn version: the record's policy.version; a version the trainer never pushed counts as step 0
    assert group_step([_loc(rollout("A", 2, version="ckpt-2"))], versions) == 5
    assert group_step([_loc(rollout("A", 3, version="someone-else"))], versions) == 0


def test_stale_groups_are_dropped_and_consumed_fresh_ones_batched(tmp_path: Path):
    st = FollowState(updates=2, global_step=4, model="m", versions={"v2": 2, "v3": 3, "v4": 4})
    buf = GroupBuffer(2, set())
    for i, v in enumerate(["v2", "v4", "v3"]):  # staleness 2, 0, 1
        for s in range(2):
            buf.add(_loc(rollout(f"T{i}", s, version=v)))
    opts = FollowOptions("m", str(tmp_path), max_staleness=1, groups_per_update=2)
    batch = _take_batch(buf, st, opts)
    assert batch is not None
    assert [(g[0].obj["instance_id"], age) for g, age in batch] == [("T2", 1), ("T1", 0)]  # the oldest first
    assert st.dropped_stale == 1
    assert len(st.consumed) == 2
    assert all(c.startswith("T0/") for c in st.consumed)
    assert json.loads((tmp_path / "follow_state.json").read_text())["dropped_stale"] == 1  # the drop is saved
    assert buf.ready == []
    # K = 0: only groups sampled by the current version train
    buf2 = GroupBuffer(2, set())
    for s in range(2):
        buf2.add(_loc(rollout("T9", s, version="v3")))
    assert _take_batch(buf2, st, FollowOptions("m", str(tmp_path), max_staleness=0)) is None
    assert st.dropped_stale == 2


def test_run_dir_of_a_synchronous_run_is_refused_a_stream_file_is_fine(tmp_path: Path):
    import pytest

    from swerl_cli.core.errors import UsageError
    from swerl_cli.training.follow import check_run_dir

    (tmp_path / "stream.jsonl").write_text("")
    check_run_dir(FollowOptions("m", str(tmp_path)))
    (tmp_path / "iter-0").mkdir()
    with pytest.raises(UsageError, match="holds iter-\\*/ folders but is not a --follow run directory"):
        check_run_dir(FollowOptions("m", str(tmp_path)))
    with pytest.raises(UsageError, match="--max-staleness must be >= 0"):
        check_run_dir(FollowOptions("m", str(tmp_path / "new"), max_staleness=-1))


def test_a_directory_is_followed_file_by_file_and_a_torn_tail_waits_for_its_restarted_writer(tmp_path: Path):
    """Each pass file has one writer; a writer killed mid-line leaves a torn last line. The follower never parses
    it, keeps reading the other files, and continues once a restarted writer (`-o FILE --resume`) cuts it and
    appends whole lines; a file that appears later is picked up."""
    from swerl_cli.streams.outputs import open_output

    d = tmp_path / "stream"
    d.mkdir()
    a, b = d / "async-0.jsonl", d / "async-1.jsonl"
    first = json.dumps(rollout("A", 0)).encode() + b"\n"
    a.write_bytes(first + (json.dumps(rollout("A", 1)).encode() + b"\n")[:25])  # the writer died mid-line
    seen: list[tuple[str, int]] = []

    def writers() -> None:
        time.sleep(0.3)
        b.write_bytes(json.dumps(rollout("B", 0)).encode() + b"\n")  # another pass goes on meanwhile
        time.sleep(0.3)
        with open_output(str(a), "append", resume=True) as out:  # the restarted writer: torn line cut, then appends
            assert "A/iter-0/0" in out.done_ids
            out.write(rollout("A", 1))

    t = threading.Thread(target=writers)
    t.start()
    for loc in tail_records(str(d), poll_s=0.02, idle_timeout_s=1.5):
        seen.append((loc.obj["instance_id"], loc.obj["sample"]))
    t.join()
    assert sorted(seen) == [("A", 0), ("A", 1), ("B", 0)]
    assert a.read_bytes().count(b"\n") == 2  # no fragment left in the file


def test_a_followed_file_rewritten_under_the_reader_is_one_clear_error(tmp_path: Path):
    import pytest

    from swerl_cli.core.errors import InputError

    d = tmp_path / "stream"
    d.mkdir()
    f = d / "async-0.jsonl"
    f.write_bytes(b"".join(json.dumps(rollout("A", i)).encode() + b"\n" for i in range(2)))
    it = tail_records(str(d), poll_s=0.01, idle_timeout_s=0.5)
    assert next(it).obj["sample"] == 0
    assert next(it).obj["sample"] == 1
    f.write_bytes(b"")  # a fresh `grade -o` (no --resume) empties its file: what was read would be read again
    with pytest.raises(InputError, match="async-0.jsonl:2: shrank below the lines already read"):
        next(it)


def test_a_group_overtaken_by_younger_ones_trains_before_it_ages_out(tmp_path: Path):
    """Arrival order is not age order when passes overlap: the older group goes first, the younger ones wait."""
    st = FollowState(updates=3, global_step=3, model="m", versions={"v2": 2, "v3": 3})
    buf = GroupBuffer(2, set())
    for i, v in enumerate(["v3", "v3", "v2", "v3"]):  # T2 (staleness 1) arrives third
        for s in range(2):
            buf.add(_loc(rollout(f"T{i}", s, version=v)))
    opts = FollowOptions("m", str(tmp_path), max_staleness=1, groups_per_update=2)
    batch = _take_batch(buf, st, opts)
    assert batch is not None
    assert [(g[0].obj["instance_id"], age) for g, age in batch] == [("T2", 1), ("T0", 0)]
    assert [g[0].obj["instance_id"] for g in buf.ready] == ["T1", "T3"]  # arrival order kept for the next update
    assert st.dropped_stale == 0
