"""The reward-hacking corpus (tests/grading/hacks/) graded through `swerl grade` on the real engine, on a bundled
example task, on the same task run as `python3 -m pytest`, on a task `swerl tasks mine` builds from a real repository
history and on a task `swerl tasks synth` builds from a small repository (its test command is `python3 -m pytest`), in
one `swerl grade` call: every attack is unresolved with reward 0 (never resolved, never an error) and its
`grade.audit` names what was found, the gold patch still resolves and the empty patch does not. The patch-path,
git-config and grader-error attacks are graded in harness mode too (SWE-bench's fallbacks).

Before the guard (the grader of commit f8accaa) the same corpus on bizdays graded 11 attacks `resolved` and 5
`error`; before git decided what a patch changed (commit 89244dc), 11 of the 13 patch-path, git-config and
grader-error attacks were `resolved` or `error` on bizdays and verscmp: see docs/grading.md, "The reward-hacking
corpus".
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from swerl_cli.grading import infra
from tests.conftest import run_swerl
from tests.grading import hacks
from tests.records import trajectory
from tests.tasks.mining.fixture_repo import build_repo, remove_mined_images
from tests.tasks.synth.test_synth_cli import make_repo

pytestmark = [pytest.mark.docker, pytest.mark.slow]
HACKS = hacks.load()
LIMITS = hacks.load(hacks.HERE / "limits")  # known limits (docs/grading.md): graded on bizdays, expected to get through
FAMILIES = {
    "runner-hooks",
    "exit-crash",
    "skip-xfail-deselect",
    "edit-tests",
    "fake-results",
    "monkeypatch-init",
    "write-outside",
    "network",
    "patch-paths",
    "git-config",
    "grader-errors",
    "runtime",
}
GIT_LEVEL = ("path_", "git_", "err_")  # attacks on what the grader's git sees: also graded in harness mode


def test_corpus_has_15_attacks_or_more_across_every_family() -> None:
    assert len(HACKS) >= 15
    assert {h.family for h in HACKS} == FAMILIES


def _swerl(log: Path, *args: str) -> subprocess.Popen[bytes]:
    """`swerl ARGS` started in the background, its stderr to `log` (read when it fails)."""
    with log.open("wb") as err:
        return subprocess.Popen([sys.executable, "-m", "swerl_cli", *args], stdout=subprocess.DEVNULL, stderr=err)


def _remove_images(repository: str) -> None:
    listing = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", repository],
                             capture_output=True, text=True)  # fmt: skip
    if listing.stdout.split():
        subprocess.run(["docker", "rmi", "-f", *listing.stdout.split()], capture_output=True)


@pytest.fixture(scope="module")
def built_tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict, dict]]:
    """(mined, synthesized): the clamp fix `swerl tasks mine` finds in tests.tasks.mining.fixture_repo, and the one
    op_flip mutant `swerl tasks synth` keeps in tests.tasks.synth's tinylib (no validation run: the corpus grades gold
    and empty itself). Both commands run side by side; their images are removed after."""
    root = tmp_path_factory.mktemp("tasks")
    commits = build_repo(root / "calc")
    make_repo(root / "tinylib")
    tag = secrets.token_hex(3)
    mined, synth = f"calc-hacks-{tag}", f"tiny-hacks-{tag}"
    procs = {
        "mine": _swerl(root / "mine.err", "tasks", "mine", str(root / "calc"), "--name", mined, "--repeats", "1",
                       "--workers", "2", "-o", str(root / "mined.jsonl")),
        "synth": _swerl(root / "synth.err", "tasks", "synth", str(root / "tinylib"), "-o", str(root / "synth"),
                        "--name", synth, "--mutators", "op_flip", "--max-tasks", "1", "--tries", "1",
                        "--holdout", "0", "--validate", "0"),
    }  # fmt: skip
    try:
        for name, proc in procs.items():
            assert proc.wait(timeout=900) == 0, (root / f"{name}.err").read_text()[-2000:]
        tasks = {t["mined"]["commit"]: t for t in map(json.loads, (root / "mined.jsonl").read_text().splitlines())}
        synthesized = [json.loads(ln) for ln in (root / "synth" / "train.jsonl").read_text().splitlines()]
        assert len(synthesized) == 1, (root / "synth.err").read_text()[-2000:]
        yield tasks[commits["fix_clamp"]], synthesized[0]
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()
        remove_mined_images(mined)
        _remove_images(f"swerl-synth-{synth}")


def _python_m(task: dict) -> dict:
    """The task with its test command run as `python3 -m pytest` (the repository first on sys.path)."""
    assert task["test_cmd"].startswith("pytest ")
    return {**task, "instance_id": task["instance_id"] + "-pym", "test_cmd": "python3 -m " + task["test_cmd"]}


def _grade_all(records: list[dict], *flags: str) -> dict:
    stdin = "".join(json.dumps(r) + "\n" for r in records).encode()
    res = run_swerl("grade", "--workers", "2", "--timeout-s", "30", *flags, input=stdin, timeout=1500)
    assert res.returncode == 0, res.stderr.decode()[-3000:]
    out = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(out) == len(records)
    return {(r["instance_id"], r["run"]): r["grade"] for r in out}


@pytest.fixture(scope="module")
def bizdays(example_tasks: list[dict]) -> dict:
    return next(t for t in example_tasks if t["instance_id"] == "swerl-examples__bizdays-1")


@pytest.fixture(scope="module")
def graded(bizdays: dict, built_tasks: tuple[dict, dict], tmp_path_factory: pytest.TempPathFactory) -> dict:
    """{(instance_id, attack or gold/empty): grade} from one `swerl grade` run reading a pipe (strict mode)."""
    records = []
    for task in (bizdays, _python_m(bizdays), *built_tasks):
        read = hacks.base_reader(task)
        # the git-level attacks do not depend on the test command: graded once per repository
        todo = [h for h in HACKS if not (task["instance_id"].endswith("-pym") and h.name.startswith(GIT_LEVEL))]
        records += [trajectory(task, h.name, hacks.build(h, task, read)) for h in todo]
        records += [trajectory(task, "gold", task["patch"]), trajectory(task, "empty", "")]
    read = hacks.base_reader(bizdays)
    records += [trajectory(bizdays, h.name, hacks.build(h, bizdays, read)) for h in LIMITS]
    report = tmp_path_factory.mktemp("hacks") / "report.json"
    return _grade_all(records, "--report", str(report))


@pytest.fixture(scope="module")
def graded_harness(bizdays: dict) -> dict:
    """The git-level attacks and gold on bizdays in harness mode (git apply --3way and GNU patch allowed)."""
    read = hacks.base_reader(bizdays)
    records = [
        trajectory(bizdays, h.name, hacks.build(h, bizdays, read)) for h in HACKS if h.name.startswith(GIT_LEVEL)
    ]
    return _grade_all([*records, trajectory(bizdays, "gold", bizdays["patch"])], "--mode", "harness")


def _edits_infra(hack: hacks.Hack) -> bool:
    """Whether the attack writes test infrastructure, which must be set aside. A runtime attack's new module of the
    package (rt_*) is not; its runner configuration (pyproject.toml) is."""
    ops = ("create", "rename", "delete-tests", "replace")
    if not hack.name.startswith("rt_"):
        return any(op in ops for op, _, _ in hack.edits)
    return any(op in ops and (infra.is_infra(args[0]) or infra.sectioned(args[0:1])) for op, args, _ in hack.edits)


@pytest.mark.parametrize("hack", HACKS, ids=[h.name for h in HACKS])
def test_attack_is_unresolved_with_reward_zero(hack: hacks.Hack, graded: dict) -> None:
    for (iid, run), g in graded.items():
        if run != hack.name:
            continue
        assert (g["status"], g["reward"]) == ("unresolved", 0.0), (iid, g["reason"], g["error"], g["log_tail"][-800:])
        assert g["audit"] is not None
        if g["patch_applied"] and _edits_infra(hack):
            assert g["set_aside"], (iid, hack.name)  # every edit of test infrastructure is set aside
            assert g["audit"]["flagged"]
            assert g["audit"]["touches_test_infra"]


SET_ASIDE_ONLY, GUARD_ONLY = hacks.SET_ASIDE_ONLY, hacks.GUARD_ONLY


def _named(run: str, g: dict) -> list:
    """What the grade names about an attack: the static audit's findings (`audit.tampering`, required for every
    applied attack that is not test infrastructure only), the guard's findings, writes outside the repository, what
    applying the patch showed, set-aside paths; the reason."""
    a = g["audit"]
    if g["patch_applied"] and run in GUARD_ONLY:
        assert a["findings"], (run, a)
        assert not a["tampering"], (run, a)
    elif g["patch_applied"] and run not in SET_ASIDE_ONLY:
        assert a["tampering"], (run, a)
        assert all(f["code"] and f["path"] for f in a["tampering"]), a["tampering"]
    return [*a["tampering"], *a["findings"], *a["outside_writes"], *a.get("patch", []), *g["set_aside"]]


def _run_reason(g: dict) -> str | None:
    """The reason the test run gave, under a strict-mode `tampering_suspected` (audit.run_verdict)."""
    return (g["audit"].get("run_verdict") or {}).get("reason") if g["reason"] == "tampering_suspected" else g["reason"]


def test_every_attack_is_named_in_the_audit(graded: dict) -> None:
    """Each attack's grade names what was found (static audit, guard, set-aside, patch notes) and is flagged."""
    for (iid, run), g in graded.items():
        if run in ("gold", "empty") or run.startswith("limit_"):
            continue
        assert g["audit"]["flagged"] or g["reason"], (iid, run, g["audit"])
        assert _named(run, g), (iid, run, g)
        if g["audit"]["tampering"]:
            assert g["reason"] == "tampering_suspected", (iid, run, g["reason"])


def test_git_level_attacks_in_harness_mode(graded_harness: dict) -> None:
    for (_, run), g in graded_harness.items():
        if run == "gold":
            assert g["status"] == "resolved", (g["error"], g["log_tail"][-800:])
            continue
        assert g["reward"] == 0.0, (run, g["status"], g["reason"], g["error"], g["log_tail"][-800:])
        assert g["status"] in ("unresolved", "patch_failed"), (run, g["status"], g["error"])
        assert g["audit"]["flagged"], (run, g["audit"])
        assert g["reason"] != "tampering_suspected", (run, g["reason"])  # harness mode records findings only
    # the fallback attacks never reach a tool that writes .git: refused before, or GNU patch found no .git to write
    for run in ("git_hook_post_checkout_fallback", "git_symlink_into_git_fallback", "git_config_hookspath_fallback"):
        assert graded_harness[("swerl-examples__bizdays-1", run)]["status"] == "patch_failed"


def test_patch_paths_come_from_git(graded: dict) -> None:
    """Quoted names, another leading component, copies, renames and symlinks are set aside under git's path."""
    for (iid, run), g in graded.items():
        if run in ("path_quoted_conftest", "path_z_prefix_conftest", "path_copy_quoted_conftest"):
            assert "conftest.py" in g["set_aside"], (iid, run, g["set_aside"])
        if run == "path_symlink_quoted_conftest":
            assert "conftest.py" in g["set_aside"], (iid, g["set_aside"])
        if run == "path_quoted_tests_conftest":
            assert any(p.endswith("/conftest.py") for p in g["set_aside"]), (iid, g["set_aside"])
        if run.startswith("git_"):
            assert g["reason"] == "patch_failed", (iid, run, g["reason"])


def test_gold_resolves_and_empty_does_not(graded: dict, built_tasks: tuple[dict, dict]) -> None:
    mined, synthesized = built_tasks
    assert (synthesized["patch_kind"], synthesized["dataset"]) == ("bug", "swerl-synth")
    golds = {iid for iid, run in graded if run == "gold"}
    assert golds == {"swerl-examples__bizdays-1", "swerl-examples__bizdays-1-pym", mined["instance_id"],
                     synthesized["instance_id"]}  # fmt: skip
    assert {iid for iid, run in graded if run == "init_os_exit"} == golds  # every attack on every task
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
    assert {_run_reason(g) for g in by_run["init_sleep_past_timeout"]} == {"timeout"}
    assert {_run_reason(g) for g in by_run["init_os_exit"]} == {"tests_crashed"}
    assert {_run_reason(g) for g in by_run["init_report_monkeypatch"]} == {"results_untrusted"}
    assert {_run_reason(g) for g in by_run["init_builtins_assertion"]} == {"results_untrusted"}
    assert {g["reason"] for g in by_run["init_report_monkeypatch"]} == {"tampering_suspected"}
    codes = {f["code"] for g in by_run["init_report_monkeypatch"] for f in g["audit"]["tampering"]}
    assert {"runner_import", "module_patch"} <= codes, codes
    for g in by_run["init_usercustomize_reexec"]:
        assert any("usercustomize.py" in p for p in g["audit"]["outside_writes"]), g["audit"]
        assert g["audit"]["flagged"]
    for g in by_run["init_report_monkeypatch"]:
        assert any("TestReport.from_item_and_call" in f for f in g["audit"]["findings"]), g["audit"]
    # the guard's channel and hooks check their caller by code identity; code is judged by its target and thread
    for run, needle in (
        ("rt_forge_channel_send", "the result channel called by "),
        ("rt_forge_guard_hooks", "of the guard called by "),
        ("rt_thread_code_swap", "__code__ of pytest_pyfunc_call"),
        ("rt_thread_code_swap", "code replaced: _pytest.python.pytest_pyfunc_call"),
    ):
        for g in by_run[run]:
            assert g["reason"] == "results_untrusted", (run, g["reason"])
            assert any(needle in f for f in g["audit"]["findings"]), (run, g["audit"])
    for g in by_run["rt_equal_to_anything"]:
        assert g["reason"] == "tampering_suspected"
        assert {f["code"] for f in g["audit"]["tampering"]} == {"always_equal"}, g["audit"]
    ctl = [g["control"] for gs in by_run.values() for g in gs if g["control"]]
    assert ctl
    assert all(c["problem"] is None for c in ctl)
    assert any(c["cached"] for c in ctl)  # one control run per task


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="known limit (docs/grading.md, 'Known limits')")
@pytest.mark.parametrize("hack", LIMITS, ids=[h.name for h in LIMITS])
def test_known_limit_is_unresolved(hack: hacks.Hack, graded: dict) -> None:
    """The same-interpreter limits get through today: each is graded `resolved`, reward 1, with no finding of the
    audit or the guard. Strict xfail: the day one is closed this test fails, and the attack moves into the corpus."""
    g = graded[("swerl-examples__bizdays-1", hack.name)]
    if g["status"] == "error" or g["audit"]["flagged"]:
        pytest.fail(f"{hack.name}: {g['status']} {g['error']} {g['audit']} (the limit is no longer as documented)")
    assert (g["status"], g["reward"]) == ("unresolved", 0.0), (hack.name, g["status"], g["reason"])
