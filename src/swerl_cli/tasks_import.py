"""`swerl tasks import`: SWE-bench / SWE-rebench / SWE-Gym rows (JSON, JSONL, parquet) -> swerl.task/1 records.

Mapping (notes/swe-formats-facts.md §4, §6): FAIL_TO_PASS/PASS_TO_PASS may be JSON strings or lists; `image` is
taken from image -> image_name -> docker_image -> the SWE-bench rule `{namespace}/sweb.eval.x86_64.{id with __ ->
_1776_, lower-cased}:latest`; `test_cmd` from test_cmd -> install_config.test_cmd -> the repo's runner (Django's
runtests.py over dotted labels, sympy's bin/test) or pytest over the test_patch's files; `log_parser` from
log_parser -> install_config.log_parser -> the repo's (django, sympy, pytest_rA); version and created_at stay
strings; every other field passes through.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from swerl_cli.errors import InputError
from swerl_cli.records import TASK, Located, Task, check_schema
from swerl_cli.sandbox.gitops import patch_files

NON_TEST_EXTS = (".json", ".png", ".csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
PYTEST = "python -m pytest -rA --tb=no -p no:cacheprovider --color=no"
CONDA = "source /opt/miniconda3/bin/activate && conda activate testbed && "
# Repos whose tests do not run under pytest in SWE-bench: (test command, log parser). Django takes dotted module
# labels under tests/ as directives, sympy takes file paths.
REPO_TESTS = {
    "django/django": ("./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1", "django"),
    "sympy/sympy": ("PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose", "sympy"),
}


def django_label(path: str) -> str:
    """A test file as a Django test label: `tests/a/b.py` -> `a.b`.

    >>> django_label("tests/template_tests/filter_tests/test_floatformat.py")
    'template_tests.filter_tests.test_floatformat'
    """
    return path.removeprefix("tests/").removesuffix(".py").replace("/", ".")


def read_rows(path: str) -> Iterator[Located]:
    """Rows of a .jsonl(.gz), .json (array, or {id: row} dict) or .parquet file, each located for errors."""
    from swerl_cli.jsonl import read_records

    if path.endswith(".parquet"):
        yield from _parquet_rows(path)
    elif path.endswith(".json"):
        import orjson

        try:
            data = orjson.loads(Path(path).read_bytes())
        except FileNotFoundError:
            raise InputError(path, None, None, "no such file") from None
        except orjson.JSONDecodeError as e:
            raise InputError(path, None, None, f"not valid JSON: {e}") from None
        rows = list(data.values()) if isinstance(data, dict) else data
        if not isinstance(rows, list):
            raise InputError(path, None, None, "expected a JSON array of rows")
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise InputError(f"{path}: row {i}", None, None, "expected a JSON object")
            yield Located(f"{path}: row {i}", None, row)  # type: ignore[arg-type]
    else:
        yield from read_records(path)


def _parquet_rows(path: str) -> Iterator[Located]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(path, None, None, "reading parquet needs pyarrow: pip install 'swerl[parquet]'") from None
    try:
        pf = pq.ParquetFile(path)
    except FileNotFoundError:
        raise InputError(path, None, None, "no such file") from None
    except Exception as e:  # pyarrow raises several types for a bad file
        raise InputError(path, None, None, f"not a readable parquet file: {e}") from None
    i = 0
    for batch in pf.iter_batches(batch_size=512):
        for row in batch.to_pylist():
            yield Located(f"{path}: row {i}", None, row)  # type: ignore[arg-type]
            i += 1


def swebench_image(instance_id: str, namespace: str = "swebench") -> str:
    """`swebench_image("sympy__sympy-20590") == "swebench/sweb.eval.x86_64.sympy_1776_sympy-20590:latest"`."""
    return f"{namespace}/sweb.eval.x86_64.{instance_id.lower().replace('__', '_1776_')}:latest"


def _str(loc: Located, key: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and key in ("version", "created_at"):
        return str(value)
    raise loc.error(key, f"expected string, got {type(value).__name__}")


def import_row(loc: Located, *, namespace: str = "swebench", workdir: str = "/testbed") -> dict[str, Any]:
    """One dataset row -> a validated task record (dict); located one-line errors for unusable rows."""
    if "schema" in loc.obj:  # a swerl task record: its version must be one this swerl reads, never rewritten
        check_schema(loc, TASK)
    row = dict(loc.obj)
    for key in ("instance_id", "base_commit"):
        if not isinstance(row.get(key), str) or not row[key]:
            raise loc.error(key, "missing" if row.get(key) is None else "expected a non-empty string")
    iid = row["instance_id"]
    if not isinstance(row.get("repo"), str):
        owner, _, rest = iid.partition("__")
        if not rest:
            raise loc.error("repo", "missing (and instance_id is not owner__repo-N)")
        row["repo"] = f"{owner}/{rest.rsplit('-', 1)[0]}"
    row.setdefault("problem_statement", "")
    for key in ("version", "created_at", "problem_statement", "hints_text"):
        if row.get(key) is not None:
            row[key] = _str(loc, key, row[key])
    install = row.get("install_config") if isinstance(row.get("install_config"), dict) else {}
    image = row.get("image") or row.get("image_name") or row.get("docker_image") or swebench_image(iid, namespace)
    row["image"] = _str(loc, "image", image)
    row["workdir"] = row.get("workdir") or workdir
    test_patch = row.get("test_patch") or ""
    if not isinstance(test_patch, str):
        raise loc.error("test_patch", "expected string")
    files = patch_files(test_patch)[0]
    row.setdefault("test_files", files)
    repo_cmd, repo_parser = REPO_TESTS.get(row["repo"], (PYTEST, "pytest_rA"))
    if not row.get("test_cmd"):
        tests = [f for f in files if not f.endswith(NON_TEST_EXTS)]
        if isinstance(install.get("test_cmd"), str):
            base_cmd = install["test_cmd"]
        else:
            base_cmd = repo_cmd
            if repo_parser == "django":
                tests = [django_label(f) for f in tests]
        conda = CONDA if row["image"].split("/")[0] in ("swebench", "swerebench", "xingyaoww") else ""
        row["test_cmd"] = f"{conda}{base_cmd} {' '.join(tests)}".strip()
    row.setdefault("log_parser", install.get("log_parser") or repo_parser)
    for key in ("FAIL_TO_FAIL", "PASS_TO_FAIL"):
        if isinstance(row.get(key), str):
            import orjson

            try:
                row[key] = orjson.loads(row[key])
            except orjson.JSONDecodeError:
                raise loc.error(key, "a string that is not a JSON list") from None
    return Task.from_json(Located(loc.source, loc.line, row)).to_json()
