"""`swerl report RUN -o RUN/iter-5/graded.jsonl` (issue 43): the page landed where every later `report RUN` reads
iteration 5's graded records, and each of them failed on it. An output at any place a report of a run directory
given reads (iter-k/ graded.jsonl, eval-graded.jsonl, dapo.json, metrics.jsonl, probe.json; a seed directory's
rft/probe.json), there already or not yet, is refused before anything is written: exit 2, one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_swerl
from tests.report.records import make_run

NAMES = ["graded.jsonl", "eval-graded.jsonl", "dapo.json", "metrics.jsonl", "probe.json"]


def _refused(res, output: Path | str) -> str:
    err = res.stderr.decode()
    assert res.returncode == 2, err
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"swerl report: -o {output} is a run file a report of "), line
    return line


@pytest.mark.parametrize("name", NAMES)
def test_an_output_where_a_later_report_reads_a_run_file_is_refused(tmp_path: Path, name: str) -> None:
    run = make_run(tmp_path / "run", [[1, 0], [2, 1]])
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    for k in (5, 0):  # an iteration not there yet (created by the write before), and one that is
        out = run / f"iter-{k}" / name
        if out.exists():
            continue  # an existing input: refused as every command's own input (test_output_contract)
        line = _refused(run_swerl("report", str(run), "-o", str(out)), out)
        assert f"(iter-{k}/{name})" in line
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before  # nothing created, iter-5/ included
    ok = run_swerl("report", str(run), "-o", str(run / "report.html"))
    assert ok.returncode == 0, ok.stderr.decode()


def test_the_place_is_found_through_symlinks_and_for_a_seed_directorys_probe(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", [[1, 0]])
    link = tmp_path / "link"
    link.symlink_to(run)
    out = link / "iter-7" / "graded.jsonl"
    _refused(run_swerl("report", str(run), "-o", str(out)), out)
    assert not (run / "iter-7").exists()
    seed = make_run(tmp_path / "paper" / "dapo-s1", [[1, 0]])
    probe = tmp_path / "paper" / "rft" / "probe.json"
    line = _refused(run_swerl("report", str(seed), "-o", str(probe)), probe)
    assert "rft/probe.json" in line
    assert not probe.parent.exists()
    # the same names anywhere else are ordinary outputs
    ok = run_swerl("report", str(run), "-o", str(tmp_path / "elsewhere" / "iter-5" / "graded.jsonl"))
    assert ok.returncode == 0, ok.stderr.decode()
