"""`swerl tasks mine` on a repository the test builds: two real fixes with tests, a docs-only commit, and a commit
whose new test is flaky. Exactly the two fixes come out; gold resolves both, the empty patch neither, and
`swerl tasks validate` takes the output as it is."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

import pytest

from swerl_cli.tasks.mining import MineConfig, inspect_commit, is_code_file, is_test_file, list_commits, outcome_lists
from tests.conftest import run_swerl
from tests.tasks.mining.fixture_repo import build_repo, remove_mined_images


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("mine") / "calc"
    return path, build_repo(path)


def test_candidates_are_commits_touching_source_and_tests(repo: tuple[Path, dict[str, str]]) -> None:
    path, commits = repo
    cfg = MineConfig()
    found = {c: inspect_commit(str(path), c, cfg, p) for c, p in list_commits(str(path), cfg)}
    assert found[commits["initial"]] == "root commit"
    assert found[commits["docs"]] == "no test change"
    fix = found[commits["fix_mean"]]
    assert not isinstance(fix, str)
    assert (fix.parent, fix.source_files, fix.test_files) == (
        commits["docs"],
        ["calc/ops.py"],
        ["tests/test_mean.py"],
    )
    assert fix.patch.startswith("diff --git a/calc/ops.py b/calc/ops.py")
    assert "tests/" not in fix.patch
    assert fix.test_patch.startswith("diff --git a/tests/test_mean.py b/tests/test_mean.py\nnew file mode")
    assert inspect_commit(str(path), commits["fix_mean"], MineConfig(max_lines=2)) == "too large"
    newest = [c for c, _ in list_commits(str(path), MineConfig(max_commits=2))]
    assert newest == [commits["fix_mean"], commits["flaky"]]
    window = MineConfig(since="2025-01-02T00:00:00Z", until="2025-01-04T00:00:00Z")
    assert [c for c, _ in list_commits(str(path), window)] == [commits["fix_clamp"], commits["docs"]]


def test_file_classes_and_outcomes() -> None:
    assert [is_test_file(p) for p in ("tests/a.py", "pkg/test_b.py", "pkg/c_test.py", "conftest.py", "pkg/t.py")] == [
        True, True, True, True, False,
    ]  # fmt: skip
    assert [is_code_file(p) for p in ("pkg/a.py", "README.md", "docs/conf.py", "tests/x.py")] == [
        True, False, False, False,
    ]  # fmt: skip
    before = [{"a": "FAILED", "b": "PASSED", "c": "PASSED"}] * 2
    after = [{"a": "PASSED", "b": "PASSED", "c": "FAILED"}, {"a": "PASSED", "b": "PASSED", "c": "PASSED"}]
    assert outcome_lists(before, after) == (["a"], ["b"], ["c"])


def test_mine_bad_repository_is_one_line(tmp_path: Path) -> None:
    res = run_swerl("tasks", "mine", str(tmp_path), "-o", str(tmp_path / "t.jsonl"))
    assert res.returncode == 3
    assert res.stderr.decode().strip() == f"swerl tasks mine: {tmp_path}: not a git repository"
    assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.parametrize("form", [["--rev", "--output={f}"], ["--rev=--output={f}"], ["--rev", "-o{f}"]])
def test_mine_rev_reaches_git_as_data_never_as_an_option(
    repo: tuple[Path, dict[str, str]], tmp_path: Path, form: list[str]
) -> None:
    """`--rev '--output=F'` was passed to `git rev-list` as an option, which created F on the host."""
    made = tmp_path / "created-by-git"
    args = [a.replace("{f}", str(made)) for a in form]
    res = run_swerl("tasks", "mine", str(repo[0]), *args, "-o", str(tmp_path / "t.jsonl"))
    assert res.returncode == 2, res.stderr.decode()
    assert "--rev must be a revision, not an option" in res.stderr.decode()
    assert not made.exists()
    assert not (tmp_path / "t.jsonl").exists()


def test_list_commits_ends_git_options_before_the_revision(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """Even past the flag check (the library API), a revision is data: git names it a bad revision."""
    cfg = MineConfig()
    object.__setattr__(cfg, "rev", f"--output={tmp_path / 'x'}")  # past __post_init__'s check
    with pytest.raises(Exception, match="bad revision"):
        list_commits(str(repo[0]), cfg)
    assert not (tmp_path / "x").exists()


@pytest.mark.docker
@pytest.mark.slow
def test_mine_finds_the_two_fixes_gold_resolves_empty_does_not(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, commits = repo
    name = f"calc-{secrets.token_hex(3)}"  # image names unique to this run, removed at the end
    out = tmp_path / "tasks.jsonl"
    args = ("tasks", "mine", str(path), "--name", name, "--repeats", "2", "--workers", "2", "-o", str(out))
    try:
        res = run_swerl(*args)
        err = res.stderr.decode()
        assert res.returncode == 0, err[-3000:]
        tasks = {t["mined"]["commit"]: t for t in map(json.loads, out.read_text().splitlines())}
        assert set(tasks) == {commits["fix_clamp"], commits["fix_mean"]}
        clamp, mean = tasks[commits["fix_clamp"]], tasks[commits["fix_mean"]]
        assert clamp["FAIL_TO_PASS"] == ["tests/test_ops.py::test_clamp_above", "tests/test_ops.py::test_clamp_inside"]
        assert clamp["PASS_TO_PASS"] == ["tests/test_ops.py::test_clamp_below", "tests/test_ops.py::test_median_odd"]
        assert (mean["FAIL_TO_PASS"], mean["PASS_TO_PASS"]) == (
            ["tests/test_mean.py::test_mean_fraction"],
            ["tests/test_mean.py::test_mean_whole"],
        )
        assert mean["base_commit"] == commits["docs"]  # the parent, a docs-only commit
        assert mean["problem_statement"] == "mean() truncates fractional results"
        assert f"dropped {name}-{commits['flaky'][:12]}: flaky: tests/test_scale.py::test_scale_timing[" in err
        assert "5 commits, 3 candidates (0 already in the output), 2 tasks" in err
        assert "not candidates: no test change: 1, root commit: 1; dropped: flaky: 1" in err
        # the image holds the whole history (the fix itself too) so episode hygiene has work to do
        show = ["docker", "run", "--rm", "--network", "none", mean["image"], "git", "-C", "/testbed", "cat-file", "-t"]
        assert subprocess.run([*show, commits["fix_mean"]], capture_output=True, text=True).stdout.strip() == "commit"
        # resumable: a second run with --resume finds everything done and writes nothing new
        res = run_swerl(*args, "--resume")
        assert res.returncode == 0, res.stderr.decode()[-2000:]
        assert "3 candidates (2 already in the output), 0 tasks" in res.stderr.decode()
        assert len(out.read_text().splitlines()) == 2
        # gold through the agent (hygiene on) resolves both; the empty patch resolves neither
        collect = run_swerl("collect", str(out), "--policy", "gold", "--concurrency", "2")
        assert collect.returncode == 0, collect.stderr.decode()[-2000:]
        graded = run_swerl("grade", "--workers", "2", input=collect.stdout)
        assert graded.returncode == 0, graded.stderr.decode()[-2000:]
        assert sorted(json.loads(g)["grade"]["status"] for g in graded.stdout.splitlines()) == ["resolved"] * 2
        # `tasks validate` takes the output as it is: gold resolves, the empty patch resolves neither task
        valid = run_swerl("tasks", "validate", str(out), "--repeats", "1", "--workers", "2")
        assert valid.returncode == 0, valid.stderr.decode()[-2000:]
        checks = [json.loads(line)["validation"] for line in valid.stdout.splitlines()]
        assert [(v["valid"], v["gold_statuses"], v["empty_statuses"]) for v in checks] == [
            (True, ["resolved"], ["unresolved"])
        ] * 2
    finally:
        remove_mined_images(name)


def test_problem_statement_from_issues_file_and_test_cmd(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    from swerl_cli.tasks.mining import load_issues, task_record

    path, commits = repo
    issues = tmp_path / "issues.jsonl"
    issues.write_text(json.dumps({"commit": commits["fix_clamp"][:7], "problem_statement": "clamp(50, 0, 10) is 0"}))
    cfg = MineConfig(name="calc", issues=str(issues))
    found = {c: inspect_commit(str(path), c, cfg, p) for c, p in list_commits(str(path), cfg)}
    texts = load_issues(cfg.issues)
    clamp = task_record(found[commits["fix_clamp"]], cfg, str(path), "img", texts)
    mean = task_record(found[commits["fix_mean"]], cfg, str(path), "img", texts)
    assert clamp.problem_statement == "clamp(50, 0, 10) is 0"
    assert mean.problem_statement == "mean() truncates fractional results"  # no issue text: the commit message
    assert (clamp.instance_id, clamp.repo, clamp.extra["repo_source"]) == (
        f"calc-{commits['fix_clamp'][:12]}",
        "local/calc",
        str(path.resolve()),
    )
    assert clamp.test_cmd.endswith("-o junit_family=xunit1 tests/test_ops.py")
    res = run_swerl("tasks", "mine", str(path), "--test-cmd", "pytest")
    assert res.returncode == 2
    assert (
        res.stderr.decode().strip()
        == "swerl tasks mine: --test-cmd must contain {files} (the test files the commit touches)"
    )
