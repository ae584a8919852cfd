"""`swerl report` shows why patches scored 0: records per grade.reason and the static audit's finding codes, per
iteration and split (aggregate.split_stats, build.py, page.reasons_table), in the tamper column and the viewer."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from swerl_cli.cli import app
from swerl_cli.report.build import build_report
from swerl_cli.report.page import reasons_table
from tests.report.records import graded, make_run, write_jsonl

HIT = {"code": "trace_hook", "path": "pkg/a.py", "line": 3, "what": "uses sys.settrace"}


def _tampered(rec: dict, *codes: str, reason: str | None = "tampering_suspected") -> dict:
    rec["grade"].update(reason=reason, audit={"flagged": True, "findings": [], "outside_writes": [],
                                              "tampering": [{**HIT, "code": c} for c in codes]})  # fmt: skip
    return rec


def test_reasons_and_audit_codes_per_iteration(tmp_path: Path) -> None:
    run = make_run(tmp_path / "runs", [[1, 4], [2, 4]])
    it0 = run / "iter-0" / "graded.jsonl"
    recs = [json.loads(line) for line in it0.read_text().splitlines()]
    _tampered(recs[0], "trace_hook", "gc_walk")
    _tampered(recs[1], "trace_hook", "trace_hook")  # one record, one code counted once
    recs[2]["grade"].update(reason="timeout")
    _tampered(recs[3], "ctypes", reason=None)  # harness mode: recorded, no reason
    write_jsonl(it0, recs)
    data = build_report([str(run)])
    train0, train1 = data.iterations[0]["train"], data.iterations[1]["train"]
    assert train0["reasons"] == {"tampering_suspected": 2, "timeout": 1}
    assert train0["audit_codes"] == {"ctypes": 1, "gc_walk": 1, "trace_hook": 2}
    assert (train1["reasons"], train1["audit_codes"]) == ({}, {})
    assert [row[8] for row in data.index[:4]] == ["tampering_suspected", "tampering_suspected", "timeout",
                                                  "audit: ctypes"]  # fmt: skip
    table = reasons_table(data)
    assert "<th>tampering_suspected</th><th>timeout</th>" in table
    assert (
        "<td>iter-0</td><td>train</td><td>8</td><td>2</td><td>1</td><td>ctypes 1, gc_walk 1, trace_hook 2</td>" in table
    )
    assert "<td>iter-1</td><td>train</td><td>8</td><td>0</td><td>0</td><td>–</td>" in table
    res = CliRunner().invoke(app, ["report", str(run), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r.html").read_text()
    assert "Why patches scored 0" in html
    assert "why patches scored 0 (train rollouts" in html  # the stacked bars of reasons
    body = json.loads(data.bodies[0])["grade"]
    assert body["audit"]["tampering"][0]["code"] == "trace_hook"  # the viewer's detail lists the findings


def test_no_reasons_no_table_and_malformed_findings_are_skipped(tmp_path: Path) -> None:
    recs = [graded("T0", 0), graded("T0", 1)]
    recs[1]["grade"]["audit"] = {"flagged": True, "tampering": ["not a dict", {"code": 3}, None]}
    data = build_report([str(write_jsonl(tmp_path / "g.jsonl", recs))])
    assert data.iterations[0]["train"]["audit_codes"] == {}
    assert reasons_table(data) == ""
    assert [row[8] for row in data.index] == ["", "audit"]
