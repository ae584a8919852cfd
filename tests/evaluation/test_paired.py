"""Paired statistics (`swerl eval A B --paired`) against answers computed by hand."""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import orjson
import pytest

from swerl_cli.core.errors import InputError
from swerl_cli.evaluation.paired import binomial_tail, mcnemar_exact, paired_compare
from tests.records import graded, jsonl


def _write(tmp_path: Path, name: str, records: list[dict]) -> str:
    p = tmp_path / name
    p.write_bytes(jsonl(records))
    return str(p)


def _seeded(iid: str, sample: int, resolved: bool, *, seed: int | None = 1000, **kw: object) -> dict:
    """A graded record whose policy.sampling.seed is seed + sample (as `swerl collect --seed` writes it)."""
    sampling = {"temperature": 1.0, "seed": None if seed is None else seed + sample}
    return graded(iid, sample, resolved, policy={"name": "m", "sampling": sampling}, **kw)


# 10 pairs: 2 both resolved, 1 both unresolved, b = 1 (A only), c = 6 (B only).
OUTCOMES = [(1, 1), (1, 1), (0, 0), (1, 0), *[(0, 1)] * 6]


def _runs(tmp_path: Path, outcomes: list[tuple[int, int]] = OUTCOMES) -> tuple[str, str]:
    a = [_seeded(f"t{i // 2}", i % 2, bool(x), run="rft") for i, (x, _) in enumerate(outcomes)]
    b = [_seeded(f"t{i // 2}", i % 2, bool(y), run="dapo") for i, (_, y) in enumerate(outcomes)]
    return _write(tmp_path, "a.jsonl", a), _write(tmp_path, "b.jsonl", b)


def test_binomial_tail_and_mcnemar_hand_values() -> None:
    assert binomial_tail(7, 6) == Fraction(8, 128)  # C(7,6) + C(7,7) = 8
    assert binomial_tail(7, 0) == 1
    assert mcnemar_exact(1, 6) == 0.125  # 2 * (C(7,0) + C(7,1)) / 2^7
    assert mcnemar_exact(6, 1) == 0.125
    assert mcnemar_exact(3, 3) == 1.0  # 2 * P(X <= 3) > 1: capped
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)


def test_paired_hand_computed(tmp_path: Path) -> None:
    p = paired_compare(*_runs(tmp_path))
    assert (p.key, p.pairs, p.both_resolved, p.both_unresolved, p.a_only, p.b_only) == ("seed", 10, 2, 1, 1, 6)
    # d = six 1s, one -1, three 0s: mean 0.5; squared deviations 6*0.25 + 2.25 + 3*0.25 = 4.5, var 4.5/9 = 0.5
    assert p.diff_mean == pytest.approx(0.5)
    assert p.diff_se == pytest.approx(math.sqrt(0.5 / 10))
    assert p.z == pytest.approx(0.5 / math.sqrt(0.05))
    assert (p.pass1_a, p.pass1_b) == (pytest.approx(0.3), pytest.approx(0.8))
    assert p.p_two_sided == 0.125
    assert p.p_b_greater == 0.0625  # P(X >= 6), X ~ Bin(7, 1/2) = 8/128
    # unpaired: A 3 of 10, sample std sqrt(10*0.3*0.7/9) / sqrt(10)
    assert p.unpaired_a == {"mean": pytest.approx(0.3), "sem": pytest.approx(math.sqrt(0.21 / 9)), "n": 10}
    assert p.unpaired_b["mean"] == pytest.approx(0.8)
    assert p.only_in_a == p.only_in_b == p.error_pairs == []
    rec = p.to_json()
    assert rec["schema"] == "swerl.paired/1"
    assert rec["discordant"] == {"a_only": 1, "b_only": 6}
    assert rec["mcnemar"] == {"p_two_sided": 0.125, "p_b_greater": 0.0625}


def test_paired_identical_runs(tmp_path: Path) -> None:
    a, _ = _runs(tmp_path)
    p = paired_compare(a, a)
    assert (p.pairs, p.diff_mean, p.diff_se, p.z, p.p_two_sided, p.p_b_greater) == (10, 0.0, 0.0, None, 1.0, 1.0)


def test_paired_unequal_pairing_lists_each_side(tmp_path: Path) -> None:
    a = [_seeded("t0", 0, True), _seeded("t0", 1, False), _seeded("t1", 0, True)]
    b = [_seeded("t0", 0, True), _seeded("t0", 1, True), _seeded("t2", 0, False), _seeded("t2", 1, True)]
    p = paired_compare(_write(tmp_path, "a.jsonl", a), _write(tmp_path, "b.jsonl", b))
    assert (p.pairs, p.b_only, p.a_only) == (2, 1, 0)
    assert [(e.view.instance_id, e.view.sample, e.seed) for e in p.only_in_a] == [("t1", 0, 1000)]
    assert [(e.view.instance_id, e.view.sample) for e in p.only_in_b] == [("t2", 0), ("t2", 1)]
    only_b = p.to_json()["only_in_b"]
    assert only_b[1] == {
        "instance_id": "t2",
        "sample": 1,
        "seed": 1001,
        "status": "resolved",
        "where": f"{tmp_path / 'b.jsonl'}:4",
    }
    # unpaired numbers use every record of each side: A 2 of 3, B 3 of 4
    assert (p.unpaired_a["n"], p.unpaired_b["n"]) == (3, 4)
    assert p.unpaired_b["mean"] == pytest.approx(0.75)


def test_paired_error_pairs_excluded_and_counted(tmp_path: Path) -> None:
    a = [_seeded("t0", 0, True), _seeded("t0", 1, False, status="error"), _seeded("t1", 0, False)]
    b = [_seeded("t0", 0, False), _seeded("t0", 1, True), _seeded("t1", 0, False, status="error")]
    p = paired_compare(_write(tmp_path, "a.jsonl", a), _write(tmp_path, "b.jsonl", b))
    assert (p.pairs, p.a_only, p.b_only, p.errors_a, p.errors_b) == (1, 1, 0, 1, 1)
    assert [(e.view.instance_id, e.view.sample) for e in p.error_pairs] == [("t0", 1), ("t1", 0)]
    assert p.to_json()["errors"] == {"a": 1, "b": 1, "pairs": 2}
    assert (p.diff_mean, p.diff_se, p.z) == (-1.0, 0.0, None)  # one pair: SE 0, z undefined
    assert p.unpaired_a == {"mean": 0.5, "sem": 0.5, "n": 2}


def test_paired_keys_on_seed_else_sample(tmp_path: Path) -> None:
    # Same samples, other seeds: nothing pairs on the seed, everything on the sample index.
    a = _write(tmp_path, "a.jsonl", [_seeded("t0", s, True, seed=0) for s in range(2)])
    b = _write(tmp_path, "b.jsonl", [_seeded("t0", s, False, seed=50) for s in range(2)])
    by_seed = paired_compare(a, b)
    assert (by_seed.key, by_seed.pairs, len(by_seed.only_in_a), len(by_seed.only_in_b)) == ("seed", 0, 2, 2)
    assert (by_seed.diff_mean, by_seed.p_two_sided) == (None, 1.0)
    by_sample = paired_compare(a, b, key="sample")
    assert (by_sample.key, by_sample.pairs, by_sample.a_only) == ("sample", 2, 2)
    # One side without seeds: auto falls back to the sample index.
    c = _write(tmp_path, "c.jsonl", [_seeded("t0", s, False, seed=None) for s in range(2)])
    assert paired_compare(a, c).key == "sample"


def test_paired_duplicate_key_is_located(tmp_path: Path) -> None:
    recs = [_seeded("t0", 0, True, run="r1"), _seeded("t0", 0, False, run="r2")]
    a = _write(tmp_path, "a.jsonl", recs)
    with pytest.raises(InputError) as e:
        paired_compare(a, a)
    assert str(e.value).startswith(f"{a}:2: field 'policy.sampling.seed': ('t0', seed 1000) again, first at {a}:1")


def test_paired_missing_sample_is_located(tmp_path: Path) -> None:
    rec = graded("t0", 0, True)
    del rec["sample"]
    a = _write(tmp_path, "a.jsonl", [graded("t1", 0, True), rec])
    with pytest.raises(InputError) as e:
        paired_compare(a, a)
    assert str(e.value) == f"{a}:2: field 'sample': missing"


def _swerl(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """The installed console script, as a user runs it."""
    exe = Path(sys.executable).with_name("swerl")
    return subprocess.run([str(exe), *args], input=stdin, capture_output=True, timeout=120)


def test_eval_paired_cli_json(tmp_path: Path) -> None:
    a, b = _runs(tmp_path)
    res = _swerl("eval", a, b, "--paired", "--json")
    assert res.returncode == 0, res.stderr
    rows = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert [r["schema"] for r in rows] == ["swerl.eval/1", "swerl.eval/1", "swerl.paired/1"]
    rec = rows[2]
    assert (rec["a"], rec["b"], rec["key"], rec["pairs"]) == (a, b, "seed", 10)
    assert rec["diff"]["mean"] == pytest.approx(0.5)
    assert rec["diff"]["se"] == pytest.approx(math.sqrt(0.05))
    assert rec["mcnemar"] == {"p_two_sided": 0.125, "p_b_greater": 0.0625}
    assert rec["unpaired"]["a"]["mean"] == rows[0]["pass@1"]["mean"] == pytest.approx(0.3)
    err = res.stderr.decode()
    assert "McNemar exact p, two-sided" in err
    assert "0.500 ± 0.224" in err  # diff B - A ± SE


def test_eval_paired_cli_stdin_is_read_once(tmp_path: Path) -> None:
    # `-` as A: the per-input table and the paired comparison both see its records (stdin is kept, not re-read).
    a, b = _runs(tmp_path)
    res = _swerl("eval", "-", b, "--paired", "--json", stdin=Path(a).read_bytes())
    assert res.returncode == 0, res.stderr
    rows = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert (rows[0]["samples"], rows[2]["a"], rows[2]["pairs"]) == (10, "<stdin>", 10)


def test_eval_paired_cli_lists_unpaired_and_errors(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.jsonl", [_seeded("t0", 0, True), _seeded("t1", 0, False, status="error")])
    b = _write(tmp_path, "b.jsonl", [_seeded("t0", 0, False), _seeded("t1", 0, True), _seeded("t9", 3, True)])
    res = _swerl("eval", a, b, "--paired")
    assert res.returncode == 0, res.stderr
    lines = res.stderr.decode().splitlines()
    assert f"  error   t1 sample 0 seed 1000  {a}:2" in lines
    assert f"  only B  t9 sample 3 seed 1003  {b}:3" in lines


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--paired"], "swerl eval: --paired needs exactly two inputs (A B); got 1"),
        (["--paired", "--pair-on", "task"], "swerl eval: --pair-on: expected one of auto, seed, sample; got 'task'"),
    ],
)
def test_eval_paired_cli_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    a, _ = _runs(tmp_path)
    res = _swerl("eval", a, *args)
    assert res.returncode == 2
    assert res.stderr.decode().splitlines() == [message]
    assert res.stdout == b""


def test_eval_paired_cli_bad_record_is_located(tmp_path: Path) -> None:
    a, _ = _runs(tmp_path)
    bad = _seeded("t0", 0, True)
    del bad["grade"]["resolved"]
    b = _write(tmp_path, "bad.jsonl", [_seeded("t1", 0, True), bad])
    res = _swerl("eval", a, b, "--paired")
    assert res.returncode == 3
    assert res.stderr.decode().splitlines() == [f"swerl eval: {b}:2: field 'grade.resolved': missing"]
    assert b"Traceback" not in res.stderr
