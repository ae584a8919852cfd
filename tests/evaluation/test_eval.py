"""pass@k and SEM against hand-computed values, n < k exclusion, error handling, --json and --plot."""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import pytest

from swerl_cli.evaluation.metrics import distribution, evaluate, mean_sem, pass_at_k
from swerl_cli.streams.jsonl import read_records
from tests.conftest import run_swerl
from tests.records import graded, jsonl


def test_pass_at_k_hand_values() -> None:
    # n=5, c=2: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass@3 = 1 - C(3,3)/C(5,3) = 1 - 1/10.
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9)
    assert pass_at_k(5, 2, 4) == 1.0  # n - c < k
    assert pass_at_k(4, 0, 4) == 0.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_mean_sem_hand_values() -> None:
    # outcomes 1,0,0,1,1: mean 0.6; sample var = (4*0.16 + ... ) -> sum sq dev = 3*0.16 + 2*0.36 = 1.2; /4 = 0.3.
    mean, sem = mean_sem([1, 0, 0, 1, 1])
    assert mean == pytest.approx(0.6)
    assert sem == pytest.approx(math.sqrt(0.3 / 5))
    assert mean_sem([1.0]) == (1.0, 0.0)


def test_distribution_percentiles() -> None:
    d = distribution([1, 2, 3, 4, 10])
    assert d == {"n": 5, "mean": 4.0, "p50": 3, "p90": pytest.approx(7.6), "max": 10}


def _write(tmp_path: Path, name: str, records: list[dict]) -> Path:
    p = tmp_path / name
    p.write_bytes(jsonl(records))
    return p


RECORDS = [
    # task a: n=3, c=1; task b: n=2, c=2 (+ one infra error); task c: n=1, c=0 (excluded from pass@2, pass@3)
    graded("a", 0, True, turns=10, tokens=100, repo="acme/x"),
    graded("a", 1, False, turns=20, tokens=200, repo="acme/x", exit_status="max_turns"),
    graded("a", 2, False, turns=30, tokens=300, repo="acme/x"),
    graded("b", 0, True, turns=40, tokens=400, repo="acme/y"),
    graded("b", 1, True, turns=50, tokens=500, repo="acme/y"),
    graded("b", 2, False, status="error", turns=1, tokens=1, repo="acme/y", exit_status="error"),
    graded("c", 0, False, turns=60, tokens=600, repo="acme/y"),
]


def test_evaluate_excludes_errors_and_tasks_with_n_below_k(tmp_path: Path) -> None:
    src = _write(tmp_path, "g.jsonl", RECORDS)
    rep = evaluate(read_records(str(src)), "g")
    assert (rep.samples, rep.errors, rep.counted, rep.tasks) == (7, 1, 6, 3)
    outcomes = [1, 0, 0, 1, 1, 0]
    assert rep.pass1 == pytest.approx(0.5)
    assert rep.pass1_sem == pytest.approx(math.sqrt(sum((x - 0.5) ** 2 for x in outcomes) / 5 / 6))
    assert rep.pass_at_k[1] == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert rep.pass_at_k[2] == pytest.approx((1 - 1 / 3 + 1) / 2)  # a: 1 - C(2,2)/C(3,2); c excluded
    assert rep.pass_at_k_excluded == {1: 0, 2: 1, 3: 2}
    assert rep.pass_at_k[3] == pytest.approx(1.0)
    assert rep.by_repo["acme/y"] == {"n": 3, "resolved": 2, "rate": pytest.approx(2 / 3)}
    assert rep.by_exit_status["max_turns"] == {"n": 1, "resolved": 0, "rate": 0.0}
    assert rep.by_status == {"error": 1, "resolved": 3, "unresolved": 3}
    assert rep.turns["max"] == 60
    assert rep.tokens["p50"] == 300


def test_evaluate_errors_as_failures(tmp_path: Path) -> None:
    src = _write(tmp_path, "g.jsonl", RECORDS)
    rep = evaluate(read_records(str(src)), "g", errors_as_failures=True)
    assert rep.counted == 7
    assert rep.pass1 == pytest.approx(3 / 7)
    assert rep.pass_at_k[1] == pytest.approx((1 / 3 + 2 / 3 + 0) / 3)


def test_eval_cli_json_columns_and_plot(tmp_path: Path) -> None:
    it0 = _write(tmp_path, "it0.jsonl", RECORDS)
    it1 = _write(tmp_path, "it1.jsonl", [graded("a", i, True) for i in range(3)])
    png = tmp_path / "m.png"
    res = run_swerl("eval", str(it0), str(it1), "--json", "--plot", str(png))
    assert res.returncode == 0, res.stderr
    rows = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert [r["schema"] for r in rows] == ["swerl.eval/1", "swerl.eval/1"]
    assert rows[0]["pass@1"]["mean"] == pytest.approx(0.5)
    assert rows[0]["pass@k_excluded"] == {"1": 0, "2": 1, "3": 2}
    assert rows[1]["pass@1"] == {"mean": 1.0, "sem": 0.0, "n": 3}
    err = res.stderr.decode()
    assert "pass@1 ± SEM" in err
    assert "it1.jsonl" in err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_eval_cli_bad_record_is_located(tmp_path: Path) -> None:
    src = _write(tmp_path, "g.jsonl", [*RECORDS[:2], {**RECORDS[2], "grade": {"status": "resolved", "resolved": 1}}])
    res = run_swerl("eval", str(src))
    assert res.returncode == 3
    assert res.stderr.decode().splitlines() == [f"swerl eval: {src}:3: field 'grade.resolved': expected bool, got 1"]


def test_eval_cli_format_markdown(tmp_path: Path) -> None:
    it0 = _write(tmp_path, "it0.jsonl", RECORDS)
    it1 = _write(tmp_path, "it1.jsonl", [graded("a", i, True) for i in range(3)])
    res = run_swerl("eval", str(it0), str(it1), "--format", "markdown")
    assert res.returncode == 0, res.stderr
    assert res.stderr == b""  # the text replaces the tables
    lines = res.stdout.decode().splitlines()
    assert lines[0] == "**swerl eval**"
    assert lines[2].startswith("| input | samples (errors) | tasks | pass@1 ± SEM | pass@2 | pass@3 | turns mean |")
    assert lines[3] == "|" + "---|" * 14  # input, 5 metrics, 8 turns/tokens stats
    # turns of every sample, the error's included: 211 / 7 = 30.1
    assert lines[4].startswith("| it0.jsonl | 7 (1) | 3 | 0.500 ± 0.224 | 0.833 (1 excl.) | 1 (2 excl.) | 30.1 |")
    assert lines[5].startswith("| it1.jsonl | 3 (0) | 1 | 1 ± 0 | 1 | 1 | 5 |")


def test_eval_cli_format_csv_raw_numbers(tmp_path: Path) -> None:
    import csv

    it0 = _write(tmp_path, "it0.jsonl", RECORDS)
    res = run_swerl("eval", str(it0), "--format", "csv")
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader(res.stdout.decode().splitlines()))
    assert len(rows) == 1
    row = rows[0]
    assert (row["source"], row["samples"], row["errors"], row["tasks"]) == (str(it0), "7", "1", "3")
    assert float(row["pass@1"]) == pytest.approx(0.5)
    assert float(row["pass@1_sem"]) == pytest.approx(math.sqrt(1.5 / 5 / 6))
    assert float(row["pass@2"]) == pytest.approx(5 / 6)
    assert row["pass@2_excluded"] == "1"
    assert float(row["turns_max"]) == 60


def test_eval_cli_format_csv_paired_block(tmp_path: Path) -> None:
    import csv

    a = _write(tmp_path, "a.jsonl", [graded("a", 0, False), graded("a", 1, False), graded("b", 0, True)])
    b = _write(tmp_path, "b.jsonl", [graded("a", 0, True), graded("a", 1, True), graded("b", 0, True)])
    res = run_swerl("eval", str(a), str(b), "--paired", "--format", "csv")
    assert res.returncode == 0, res.stderr
    blocks = res.stdout.decode().split("\n\n")
    assert len(blocks) == 2
    (row,) = list(csv.DictReader(blocks[1].splitlines()))
    assert (row["a"], row["b"], row["key"], row["pairs"], row["a_only"], row["b_only"]) == (
        str(a),
        str(b),
        "sample",  # no policy.sampling.seed in these records
        "3",
        "0",
        "2",
    )
    assert float(row["diff"]) == pytest.approx(2 / 3)
    assert float(row["p_two_sided"]) == 0.5  # 2 * C(2,0) / 2^2
    assert float(row["z"]) == pytest.approx(2.0)  # d = 1, 1, 0: mean 2/3, SE 1/3


def test_eval_cli_format_refuses_json_and_unknown(tmp_path: Path) -> None:
    src = _write(tmp_path, "g.jsonl", RECORDS)
    res = run_swerl("eval", str(src), "--format", "csv", "--json")
    assert (res.returncode, res.stdout) == (2, b"")
    assert res.stderr.decode().splitlines() == [
        "swerl eval: --format csv prints text on stdout, --json records: give one of them"
    ]
    res = run_swerl("eval", str(src), "--format", "html")
    assert res.returncode == 2
    expected = "swerl eval: --format: expected one of table, markdown, csv; got 'html'"
    assert res.stderr.decode().splitlines() == [expected]


def test_eval_cli_compare_reads_stdin_once(tmp_path: Path) -> None:
    # Before: the per-input table consumed stdin and --compare saw no record of A ("2 only in b.jsonl").
    recs = [graded("x", 0, True), graded("y", 0, False)]
    b = _write(tmp_path, "b.jsonl", recs)
    res = run_swerl("eval", "-", str(b), "--compare", "--json", input=jsonl(recs))
    assert res.returncode == 0, res.stderr
    cmp = orjson.loads(res.stdout.splitlines()[-1])
    assert cmp["counts"]["agree"] == 2
    assert cmp["counts"]["only_b"] == 0
