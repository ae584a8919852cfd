"""`swerl tasks import`: SWE-bench (full, Lite, Verified), SWE-rebench, SWE-Gym and SWE-smith rows -> swerl.task/1.

Which dataset a row comes from (`--dataset`, default auto): SWE-rebench rows carry `install_config`, SWE-smith rows
an `image_name` and no `test_patch`, SWE-Gym rows no `environment_setup_commit`; the rest are SWE-bench rows.
Mapping (docs/tasks.md):
- FAIL_TO_PASS/PASS_TO_PASS (and FAIL_TO_FAIL/PASS_TO_FAIL) may be JSON strings or lists; version and created_at
  stay strings; every other field passes through.
- `image`: image -> image_name -> docker_image -> the dataset's rule (SWE-bench `swebench/sweb.eval.x86_64.{id with
  __ -> _1776_, lower-cased}:latest`, SWE-rebench the same under `swerebench`, SWE-Gym `xingyaoww/...{__ -> _s_}`).
- `test_cmd`: test_cmd -> SWE-rebench's install_config.test_cmd (with its `LANG=C.UTF-8 LC_ALL=C.UTF-8` prefix)
  -> the SWE-bench harness's command for the repo and version (task_specs.py: runner flags, tox, eval_commands
  such as Django's locale exports) -> `pytest -rA`; followed by the test_patch's files (Django: dotted labels).
  SWE-smith rows have no test_patch: their command runs the files of FAIL_TO_PASS and PASS_TO_PASS.
- `log_parser`: log_parser -> install_config.log_parser -> the harness's parser for the repo -> parse_log_pytest.
- SWE-smith's `patch` introduces the bug: it is kept as `bug_patch`, `patch` becomes its reverse (the gold fix)
  and `patch_kind` is "bug". A row without `base_commit` gets `base_commit: "HEAD"`: every sandbox start applies
  `bug_patch` to the image's HEAD and commits it (sandbox/__init__.py), no network needed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from swerl_cli.core.errors import ConfigError
from swerl_cli.sandbox.gitops import patch_files
from swerl_cli.streams.records import TASK, Located, Task, check_schema, dict_at
from swerl_cli.streams.rows import read_rows
from swerl_cli.tasks.fields import task_row_error
from swerl_cli.tasks.specs import PYTEST, spec_for

__all__ = ["DATASETS", "import_row", "read_rows", "reverse_patch", "swebench_image"]

NON_TEST_EXTS = (".json", ".png", ".csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
CONDA = "source /opt/miniconda3/bin/activate && conda activate testbed && "
SMITH_PYTEST = "pytest --disable-warnings --color=no --tb=no --verbose"
REBENCH_ENV = "LANG=C.UTF-8 LC_ALL=C.UTF-8"
DATASETS = ("auto", "swe-bench", "swe-rebench", "swe-gym", "swe-smith")
CONDA_NAMESPACES = ("swebench", "swerebench", "xingyaoww")


def django_label(path: str) -> str:
    """A test file as a Django test label: `tests/a/b.py` -> `a.b`.

    >>> django_label("tests/template_tests/filter_tests/test_floatformat.py")
    'template_tests.filter_tests.test_floatformat'
    """
    return path.removeprefix("tests/").removesuffix(".py").replace("/", ".")


def detect(row: dict[str, Any]) -> str:
    """The dataset a row looks like (see the module doc)."""
    if isinstance(row.get("install_config"), dict):
        return "swe-rebench"
    if row.get("image_name") and not row.get("test_patch"):
        return "swe-smith"
    if "environment_setup_commit" not in row:
        return "swe-gym"
    return "swe-bench"


def reverse_patch(patch: str) -> str:
    r"""The unified diff that undoes `patch` (old and new sides swapped), as `git apply -R` reads it.

    >>> reverse_patch("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n")
    '--- a/x\n+++ b/x\n@@ -1 +1 @@\n-new\n+old\n'
    """
    out: list[str] = []
    lines = patch.split("\n")
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("diff --git a/") and " b/" in ln:
            a, _, b = ln[len("diff --git a/") :].partition(" b/")
            out.append(f"diff --git a/{b} b/{a}")
        elif ln.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = ln[4:], lines[i + 1][4:]
            out.append("--- " + ("a/" + new[2:] if new.startswith("b/") else new))
            out.append("+++ " + ("b/" + old[2:] if old.startswith("a/") else old))
            i += 1
        elif ln.startswith("@@ ") and " @@" in ln[3:]:
            ranges, _, rest = ln[3:].partition(" @@")
            minus, _, plus = ranges.partition(" ")
            out.append(f"@@ -{plus[1:]} +{minus[1:]} @@{rest}")
        elif ln.startswith("new file mode "):
            out.append("deleted file mode " + ln[len("new file mode ") :])
        elif ln.startswith("deleted file mode "):
            out.append("new file mode " + ln[len("deleted file mode ") :])
        elif ln.startswith("index ") and ".." in ln:
            ids, sep, mode = ln[6:].partition(" ")
            x, _, y = ids.partition("..")
            out.append(f"index {y}..{x}{sep}{mode}")
        elif ln.startswith("rename from "):
            out.append("rename to " + ln[len("rename from ") :])
        elif ln.startswith("rename to "):
            out.append("rename from " + ln[len("rename to ") :])
        elif ln[:1] in ("+", "-"):  # a run of changed lines: removals first, as diff writes them
            run = []
            while i < len(lines) and lines[i][:1] in ("+", "-") and not lines[i].startswith(("--- ", "+++ ")):
                run.append(("-" if lines[i][0] == "+" else "+") + lines[i][1:])
                i += 1
            out += [r for r in run if r[0] == "-"] + [r for r in run if r[0] == "+"]
            continue
        else:
            out.append(ln)
        i += 1
    return "\n".join(out)


def swebench_image(instance_id: str, namespace: str = "swebench") -> str:
    """`swebench_image("sympy__sympy-20590") == "swebench/sweb.eval.x86_64.sympy_1776_sympy-20590:latest"`."""
    return f"{namespace}/sweb.eval.x86_64.{instance_id.lower().replace('__', '_1776_')}:latest"


def _str(loc: Located, key: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and key in ("version", "created_at"):
        return str(value)
    raise loc.error(key, f"expected string, got {type(value).__name__}")


def _image(row: dict[str, Any], iid: str, dataset: str, namespace: str | None) -> Any:
    named = row.get("image") or row.get("image_name") or row.get("docker_image")
    if named:
        return named
    if dataset == "swe-gym":
        return f"{namespace or 'xingyaoww'}/sweb.eval.x86_64.{iid.lower().replace('__', '_s_')}:latest"
    return swebench_image(iid, namespace or ("swerebench" if dataset == "swe-rebench" else "swebench"))


def _test_cmd(row: dict[str, Any], dataset: str, files: list[str], install: dict[str, Any]) -> tuple[str, str]:
    """(test command with its directives, log parser name) for a row without its own test_cmd."""
    spec = spec_for(row["repo"], row.get("version"))
    parser = (spec.log_parser if spec else None) or "parse_log_pytest"
    if dataset == "swe-smith":
        ids = [*row.get("FAIL_TO_PASS", []), *row.get("PASS_TO_PASS", [])]
        tests = list(dict.fromkeys(str(t).split("::", 1)[0] for t in ids if isinstance(t, str)))
        return " ".join([SMITH_PYTEST, *tests]), "parse_log_pytest"
    tests = [f for f in files if not f.endswith(NON_TEST_EXTS)]
    install_cmd = install.get("test_cmd")
    if isinstance(install_cmd, list):
        install_cmd = " && ".join(str(c) for c in install_cmd)
    if isinstance(install_cmd, str) and install_cmd:
        return f"{REBENCH_ENV} {install_cmd} {' '.join(tests)}".strip(), parser
    if spec is None:
        return f"{PYTEST} {' '.join(tests)}".strip(), parser
    if spec.directives == "django":
        tests = [django_label(f) for f in tests]
    run = f"{spec.test_cmd} {' '.join(tests)}".strip()
    if spec.eval_commands:  # as in the harness's eval script: run in order, a failing one does not stop the tests
        run = "{ " + "; ".join([*spec.eval_commands, run]) + "; }"
    return run, parser


def import_row(
    loc: Located,
    *,
    namespace: str | None = None,
    workdir: str = "/testbed",
    dataset: str = "auto",
    allowed_sources: Iterable[str] = (),
) -> dict[str, Any]:
    """One dataset row -> a validated task record (dict); located one-line errors for unusable rows, among them
    the values docker and git would refuse (image, workdir, base_commit, setup, a repo_source outside
    `allowed_sources`): an imported file holds only tasks that can be built and run."""
    task = _import(loc, namespace, workdir, dataset)
    bad = task_row_error(loc, task, build=True, allowed=allowed_sources)
    if bad is not None:
        raise bad
    return task.to_json()


def _import(loc: Located, namespace: str | None, workdir: str, dataset: str) -> Task:
    if dataset not in DATASETS:
        raise ConfigError(f"--dataset must be one of {', '.join(DATASETS)}; got {dataset!r}")
    if "schema" in loc.obj:  # a swerl task record: its version must be one this swerl reads, never rewritten
        check_schema(loc, TASK)
        return Task.from_json(loc)
    row = dict(loc.obj)
    kind = detect(row) if dataset == "auto" else dataset
    if kind == "swe-smith" and row.get("base_commit") is None and "bug_patch" not in row:
        # The image holds the repository before the bug: the sandbox applies and commits it at start.
        row["base_commit"] = "HEAD"
        row["bug_patch"] = row.get("patch")
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
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL"):
        if isinstance(row.get(key), str):
            import orjson

            try:
                row[key] = orjson.loads(row[key])
            except orjson.JSONDecodeError:
                raise loc.error(key, "a string that is not a JSON list") from None
    install = dict_at(row, "install_config")
    row["image"] = _str(loc, "image", _image(row, iid, kind, namespace))
    row["workdir"] = row.get("workdir") or workdir
    test_patch = row.get("test_patch") or ""
    if not isinstance(test_patch, str):
        raise loc.error("test_patch", "expected string")
    files = patch_files(test_patch)[0]
    row.setdefault("test_files", files)
    cmd, parser = _test_cmd(row, kind, files, install)
    if not row.get("test_cmd"):
        # SWE-bench-style images (and every SWE-smith image) hold the environment as the conda env `testbed`
        conda = CONDA if kind == "swe-smith" or row["image"].split("/")[0] in CONDA_NAMESPACES else ""
        row["test_cmd"] = conda + cmd
    row.setdefault("log_parser", install.get("log_parser") or parser)
    if kind == "swe-smith" and isinstance(row.get("patch"), str) and row.get("patch_kind") != "bug":
        row["bug_patch"] = row["patch"]
        row["patch"] = reverse_patch(row["patch"])
        row["patch_kind"] = "bug"
    row.setdefault("dataset", kind)
    return Task.from_json(Located(loc.source, loc.line, row))
