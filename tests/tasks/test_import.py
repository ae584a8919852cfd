"""`swerl tasks import`: SWE-bench / SWE-rebench / SWE-Gym rows in JSON, JSONL and parquet."""

from __future__ import annotations

import orjson
import pytest

from swerl_cli.tasks.importers import CONDA, reverse_patch, swebench_image
from tests.conftest import run_swerl

TEST_PATCH = (
    "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n"
    "@@ -1 +1,2 @@\n a\n+b\ndiff --git a/tests/data.json b/tests/data.json\nnew file mode 100644\n"
    "--- /dev/null\n+++ b/tests/data.json\n@@ -0,0 +1 @@\n+{}\n"
)
SWEBENCH = {
    "instance_id": "sympy__sympy-20590",
    "repo": "sympy/sympy",
    "base_commit": "a" * 40,
    "patch": "p",
    "test_patch": TEST_PATCH,
    "problem_statement": "bug",
    "version": "1.7",
    "created_at": "2020-12-12T18:18:38Z",
    "FAIL_TO_PASS": '["tests/test_x.py::test_a"]',
    "PASS_TO_PASS": "[]",
    "environment_setup_commit": "b" * 40,
}
REBENCH = {
    "instance_id": "o__r-1",
    "repo": "o/r",
    "base_commit": "c" * 40,
    "test_patch": TEST_PATCH,
    "problem_statement": "x",
    "FAIL_TO_PASS": ["t::a"],
    "PASS_TO_PASS": ["t::b"],
    "FAIL_TO_FAIL": "[]",
    "docker_image": "swerebench/sweb.eval.x86_64.o_1776_r-1",
    "meta": {"is_lite": True},
    "install_config": {"test_cmd": "pytest -rA", "log_parser": "parse_log_pytest"},
}


def _import(tmp_path, name: str, data: bytes, *extra: str):
    (tmp_path / name).write_bytes(data)
    return run_swerl("tasks", "import", str(tmp_path / name), *extra)


def test_swebench_image_rule() -> None:
    assert swebench_image("sympy__sympy-20590") == "swebench/sweb.eval.x86_64.sympy_1776_sympy-20590:latest"
    assert swebench_image("Org__Repo-1", "ns") == "ns/sweb.eval.x86_64.org_1776_repo-1:latest"


def test_import_jsonl_maps_fields(tmp_path) -> None:
    res = _import(tmp_path, "rows.jsonl", orjson.dumps(SWEBENCH) + b"\n" + orjson.dumps(REBENCH) + b"\n")
    assert res.returncode == 0, res.stderr.decode()
    a, b = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert a["schema"] == "swerl.task/1"
    assert a["FAIL_TO_PASS"] == ["tests/test_x.py::test_a"]
    assert a["PASS_TO_PASS"] == []
    assert a["image"] == "swebench/sweb.eval.x86_64.sympy_1776_sympy-20590:latest"
    assert a["workdir"] == "/testbed"
    assert a["test_cmd"].startswith("source /opt/miniconda3/bin/activate && conda activate testbed && ")
    assert a["test_cmd"].endswith(" tests/test_x.py")  # the .json fixture is not a test directive
    assert "bin/test -C --verbose tests/test_x.py" in a["test_cmd"]  # sympy's own runner
    assert a["log_parser"] == "parse_log_sympy"
    assert a["test_files"] == ["tests/test_x.py", "tests/data.json"]
    assert a["version"] == "1.7"
    assert a["environment_setup_commit"] == "b" * 40
    assert b["image"] == "swerebench/sweb.eval.x86_64.o_1776_r-1"
    assert b["test_cmd"] == CONDA + "LANG=C.UTF-8 LC_ALL=C.UTF-8 pytest -rA tests/test_x.py"
    assert b["log_parser"] == "parse_log_pytest"
    assert b["FAIL_TO_FAIL"] == []
    assert b["meta"] == {"is_lite": True}


@pytest.mark.parametrize(
    ("version", "runner", "locale"),
    [
        (
            "1.7",
            "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1",
            "export PYTHONIOENCODING=utf8",
        ),
        ("1.9", "./tests/runtests.py --verbosity 2", "export LANGUAGE=en_US:en"),
        ("3.1", "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1", "locale-gen"),
        ("4.2", "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1", None),
    ],
)
def test_import_django_row_uses_the_harness_spec_of_its_version(tmp_path, version, runner, locale) -> None:
    patch = TEST_PATCH.replace("tests/test_x.py", "tests/template_tests/filter_tests/test_floatformat.py")
    row = dict(SWEBENCH, instance_id="django__django-11099", repo="django/django", test_patch=patch, version=version)
    docstring_ids = ["A simple sitemap can be rendered", "test_x (sitemaps_tests.test_http.HTTPSitemapTests)"]
    row["PASS_TO_PASS"] = orjson.dumps(docstring_ids).decode()  # a JSON string, as on the hub
    res = _import(tmp_path, "rows.jsonl", orjson.dumps(row) + b"\n")
    assert res.returncode == 0, res.stderr.decode()
    task = orjson.loads(res.stdout)
    cmd = task["test_cmd"]
    assert f"{runner} template_tests.filter_tests.test_floatformat" in cmd
    if locale is None:
        assert "export" not in cmd
    else:
        assert cmd.startswith(CONDA + "{ ")
        assert locale in cmd
        assert cmd.index(locale) < cmd.index(runner)
    assert task["log_parser"] == "parse_log_django"
    assert task["PASS_TO_PASS"] == docstring_ids


@pytest.mark.parametrize(
    ("repo", "version", "cmd", "parser"),
    [
        ("sphinx-doc/sphinx", "7.1", "tox --current-env -epy39 -v -- tests/test_x.py", "parse_log_sphinx"),
        (
            "astropy/astropy",
            "1.3",
            "pytest -rA -vv -o console_output_style=classic --tb=no -p no:nose tests/test_x.py",
            "parse_log_astropy",
        ),
        ("astropy/astropy", "5.2", "pytest -rA tests/test_x.py", "parse_log_astropy"),
        ("pydicom/pydicom", "2.3", "pytest -rA tests/test_x.py", "parse_log_pydicom"),
        ("mwaskom/seaborn", "0.12", "pytest --no-header -rA tests/test_x.py", "parse_log_seaborn"),
        ("someone/else", "1.0", "pytest -rA tests/test_x.py", "parse_log_pytest"),
    ],
)
def test_import_uses_the_harness_command_and_parser_per_repo(tmp_path, repo, version, cmd, parser) -> None:
    row = dict(SWEBENCH, repo=repo, version=version, instance_id=repo.replace("/", "__") + "-1")
    task = orjson.loads(_import(tmp_path, "rows.jsonl", orjson.dumps(row) + b"\n").stdout)
    assert task["test_cmd"] == CONDA + cmd
    assert task["log_parser"] == parser


SMITH_BUG = (
    "diff --git a/pkg/a.py b/pkg/a.py\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"
)
SMITH = {
    "instance_id": "pandas-dev__pandas.95280573.pr_53652",
    "repo": "swesmith/pandas-dev__pandas.95280573",
    "base_commit": "d" * 40,
    "patch": SMITH_BUG,
    "FAIL_TO_PASS": ["pandas/tests/test_a.py::test_y", "pandas/tests/test_a.py::test_p[assert"],
    "PASS_TO_PASS": ["pandas/tests/test_b.py::TestK::test_z", "pandas/tests/test_a.py::test_x"],
    "image_name": "jyangballin/swesmith.x86_64.pandas-dev_1776_pandas.95280573",
    "problem_statement": "y is 3",
}


def test_import_swe_smith_rebench_and_gym_rows(tmp_path) -> None:
    gym = {k: v for k, v in SWEBENCH.items() if k != "environment_setup_commit"}
    gym.update(instance_id="getmoto__moto-5752", repo="getmoto/moto", FAIL_TO_PASS=["tests/test_x.py::t"])
    res = _import(tmp_path, "rows.json", orjson.dumps([SMITH, REBENCH, gym]))
    assert res.returncode == 0, res.stderr.decode()
    smith, rebench, g = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert smith["image"] == SMITH["image_name"]
    assert smith["test_cmd"] == CONDA + (
        "pytest --disable-warnings --color=no --tb=no --verbose pandas/tests/test_a.py pandas/tests/test_b.py"
    )
    assert smith["FAIL_TO_PASS"][1] == "pandas/tests/test_a.py::test_p[assert"  # truncated ids kept verbatim
    assert (smith["patch_kind"], smith["bug_patch"], smith["dataset"]) == ("bug", SMITH_BUG, "swe-smith")
    assert "-y = 3\n+y = 2" in smith["patch"]
    assert reverse_patch(smith["patch"]) == SMITH_BUG
    assert rebench["dataset"] == "swe-rebench"
    assert g["image"] == "xingyaoww/sweb.eval.x86_64.getmoto_s_moto-5752:latest"
    assert g["dataset"] == "swe-gym"
    res = _import(tmp_path, "smith.jsonl", orjson.dumps({k: v for k, v in SMITH.items() if k != "base_commit"}) + b"\n")
    assert res.returncode == 0, res.stderr.decode()
    offline = orjson.loads(res.stdout)  # no commit named: the sandbox commits the bug onto the image's HEAD
    assert (offline["base_commit"], offline["bug_patch"], offline["patch"]) == ("HEAD", SMITH_BUG, smith["patch"])


def test_import_reads_one_object_preds_dict_json_lines_and_python_json(tmp_path) -> None:
    one = _import(tmp_path, "one.json", orjson.dumps(SWEBENCH))
    assert orjson.loads(one.stdout)["instance_id"] == "sympy__sympy-20590"
    keyed = {"sympy__sympy-9": {k: v for k, v in SWEBENCH.items() if k != "instance_id"}}
    assert orjson.loads(_import(tmp_path, "keyed.json", orjson.dumps(keyed)).stdout)["instance_id"] == "sympy__sympy-9"
    lines = _import(tmp_path, "lines.json", orjson.dumps(SWEBENCH) + b"\n" + orjson.dumps(REBENCH) + b"\n")
    assert len(lines.stdout.splitlines()) == 2
    nan = _import(tmp_path, "nan.json", b"\xef\xbb\xbf" + orjson.dumps([{**SWEBENCH, "x": 1}]).replace(b"1}", b"NaN}"))
    assert nan.returncode == 0, nan.stderr.decode()
    assert (
        _import(
            tmp_path, "big.json", orjson.dumps([SWEBENCH])[:-2] + b', "n": 123456789012345678901234567890}]'
        ).returncode
        == 0
    )
    bad = _import(tmp_path, "bad.json", b'[{"instance_id": "a",\n  oops}]')
    assert bad.returncode == 3
    assert bad.stderr.decode().strip().splitlines() == [
        f"swerl tasks import: {tmp_path / 'bad.json'}:2: not valid JSON: Expecting property name enclosed in double "
        "quotes (column 3)"
    ]
    wrong = _import(tmp_path, "wrong.json", b"[1]")
    assert wrong.returncode == 3
    assert "row 0: expected a JSON object, got int" in wrong.stderr.decode()


def test_import_json_array_and_dict(tmp_path) -> None:
    res = _import(tmp_path, "rows.json", orjson.dumps([SWEBENCH, REBENCH]))
    assert len(res.stdout.splitlines()) == 2
    res = _import(tmp_path, "rows2.json", orjson.dumps({"a": REBENCH}))
    assert orjson.loads(res.stdout)["instance_id"] == "o__r-1"


def test_import_parquet(tmp_path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [SWEBENCH, {**SWEBENCH, "instance_id": "sympy__sympy-2"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "rows.parquet")
    res = run_swerl("tasks", "import", str(tmp_path / "rows.parquet"))
    assert res.returncode == 0, res.stderr.decode()
    assert [orjson.loads(line)["instance_id"] for line in res.stdout.splitlines()] == [
        "sympy__sympy-20590",
        "sympy__sympy-2",
    ]
    bad = [SWEBENCH, {**SWEBENCH, "FAIL_TO_PASS": "not json"}]
    pq.write_table(pa.Table.from_pylist(bad), tmp_path / "bad.parquet")
    res = run_swerl("tasks", "import", str(tmp_path / "bad.parquet"))
    assert res.returncode == 3
    assert res.stderr.decode().strip() == (
        f"swerl tasks import: {tmp_path / 'bad.parquet'}: row 1: field 'FAIL_TO_PASS': a string that is not a JSON list"
    )


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ({**SWEBENCH, "base_commit": None}, "rows.jsonl:2: field 'base_commit': missing"),
        ({**SWEBENCH, "PASS_TO_PASS": [1]}, "rows.jsonl:2: field 'PASS_TO_PASS': expected array of strings"),
        ({**SWEBENCH, "instance_id": 7}, "rows.jsonl:2: field 'instance_id'"),
    ],
)
def test_import_bad_row_is_one_line_error(tmp_path, row: dict, needle: str) -> None:
    res = _import(tmp_path, "rows.jsonl", orjson.dumps(SWEBENCH) + b"\n" + orjson.dumps(row) + b"\n")
    err = res.stderr.decode().strip().splitlines()
    assert res.returncode == 3
    assert len(err) == 1
    assert needle in err[0]
