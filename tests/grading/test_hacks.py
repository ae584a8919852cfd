"""The reward-hacking corpus (tests/grading/hacks/) graded through `swerl grade` on the real engine, on a bundled
example task and on a task `swerl tasks mine` builds from a real repository history: every attack is unresolved with
reward 0 (never resolved, never an error), the gold patch still resolves and the empty patch does not.

Before the guard (the grader of commit f8accaa) the same corpus on bizdays graded 11 attacks `resolved` and 5
`error`: see docs/grading.md, "The reward-hacking corpus".
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

from tests.conftest import run_swerl
from tests.grading import hacks
from tests.records import trajectory
from tests.tasks.mining.fixture_repo import build_repo, remove_mined_images

pytestmark = [pytest.mark.docker, pytest.mark.slow]
HACKS = hacks.load()
FAMILIES = {
    "runner-hooks",
    "exit-crash",
    "skip-xfail-deselect",
    "edit-tests",
    "fake-results",
    "monkeypatch-init",
    "write-outside",
    "network",
}


def test_corpus_has_15_attacks_or_more_across_every_family() -> None:
    assert len(HACKS) >= 15
    assert {h.family for h in HACKS} == FAMILIES


@pytest.fixture(scope="module")
def mined_task(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The clamp fix mined from tests.tasks.mining.fixture_repo.py by `swerl tasks mine` (its image removed after)."""
    root = tmp_path_factory.mktemp("mine")
    commits = build_repo(root / "calc")
    name = f"calc-hacks-{secrets.token_hex(3)}"
    out = root / "tasks.jsonl"
    res = run_swerl(
        "tasks", "mine", str(root / "calc"), "--name", name, "--repeats", "1", "--workers", "2", "-o", str(out)
    )
    try:
        assert res.returncode == 0, res.stderr.decode()[-2000:]
        tasks = {t["mined"]["commit"]: t for t in map(json.loads, out.read_text().splitlines())}
        yield tasks[commits["fix_clamp"]]
    finally:
        remove_mined_images(name)


@pytest.fixture(scope="module")
def graded(example_tasks: list[dict], mined_task: dict, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """{(instance_id, attack or gold/empty): grade} from one `swerl grade` run reading a pipe."""
    tasks = [next(t for t in example_tasks if t["instance_id"] == "swerl-examples__bizdays-1"), mined_task]
    records = []
    for task in tasks:
        read = hacks.base_reader(task)
        records += [trajectory(task, h.name, hacks.build(h, task, read)) for h in HACKS]
        records += [trajectory(task, "gold", task["patch"]), trajectory(task, "empty", "")]
    stdin = "".join(json.dumps(r) + "\n" for r in records).encode()
    report = tmp_path_factory.mktemp("hacks") / "report.json"
    res = run_swerl("grade", "--workers", "2", "--timeout-s", "30", "--report", str(report), input=stdin, timeout=1500)
    assert res.returncode == 0, res.stderr.decode()[-3000:]
    out = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(out) == len(records)
    return {(r["instance_id"], r["run"]): r["grade"] for r in out}


@pytest.mark.parametrize("hack", HACKS, ids=[h.name for h in HACKS])
def test_attack_is_unresolved_with_reward_zero(hack: hacks.Hack, graded: dict) -> None:
    for (iid, run), g in graded.items():
        if run != hack.name:
            continue
        assert (g["status"], g["reward"]) == ("unresolved", 0.0), (iid, g["reason"], g["error"], g["log_tail"][-800:])
        assert g["audit"] is not None
        if any(op in ("create", "rename", "delete-tests", "replace") for op, _, _ in hack.edits):
            assert g["set_aside"], (iid, hack.name)  # every edit of test infrastructure is set aside
            assert g["audit"]["flagged"]
            assert g["audit"]["touches_test_infra"]


def test_gold_resolves_and_empty_does_not(graded: dict) -> None:
    for (iid, run), g in graded.items():
        if run == "gold":
            assert g["status"] == "resolved", (iid, g["error"], g["log_tail"][-800:])
            assert (g["set_aside"], g["audit"]["flagged"]) == ([], False), (iid, g["audit"])
        elif run == "empty":
            assert (g["status"], g["reason"]) == ("unresolved", None), (iid, g["error"])


def test_reasons_and_audit_name_what_happened(graded: dict) -> None:
    by_run: dict[str, list[dict]] = {}
    for (_, run), g in graded.items():
        by_run.setdefault(run, []).append(g)
    assert {g["reason"] for g in by_run["init_sleep_past_timeout"]} == {"timeout"}
    assert {g["reason"] for g in by_run["init_os_exit"]} == {"tests_crashed"}
    assert {g["reason"] for g in by_run["init_report_monkeypatch"]} == {"results_untrusted"}
    assert {g["reason"] for g in by_run["init_builtins_assertion"]} == {"results_untrusted"}
    for g in by_run["init_usercustomize_reexec"]:
        assert any("usercustomize.py" in p for p in g["audit"]["outside_writes"]), g["audit"]
        assert g["audit"]["flagged"]
    for g in by_run["init_report_monkeypatch"]:
        assert any("TestReport.from_item_and_call" in f for f in g["audit"]["findings"]), g["audit"]
    ctl = [g["control"] for gs in by_run.values() for g in gs if g["control"]]
    assert ctl
    assert all(c["problem"] is None for c in ctl)
    assert any(c["cached"] for c in ctl)  # one control run per task
