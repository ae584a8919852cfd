"""SWE-bench (full, Lite, Verified) rows: the catch-all format of `--dataset auto`, and the base of the
SWE-bench-style formats (SWE-rebench, SWE-Gym, SWE-smith).

- `image`: `swebench/sweb.eval.x86_64.{instance_id with __ -> _1776_, lower-cased}:latest` (`--namespace`
  replaces `swebench`).
- `test_cmd`: SWE-rebench's install_config.test_cmd (with its `LANG=C.UTF-8 LC_ALL=C.UTF-8` prefix) when the row
  has one -> the SWE-bench harness's command for the repo and version (specs.py: runner flags, tox, eval_commands
  such as Django's locale exports) -> `pytest -rA`; followed by the test_patch's files (Django: dotted labels).
- `log_parser`: install_config.log_parser -> the harness's parser for the repo -> parse_log_pytest.
- Images under the SWE-bench-style namespaces hold the environment as the conda env `testbed`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from swerl_cli.tasks.importers.base import NON_TEST_EXTS, Importer
from swerl_cli.tasks.specs import PYTEST, spec_for

REBENCH_ENV = "LANG=C.UTF-8 LC_ALL=C.UTF-8"
CONDA_NAMESPACES = ("swebench", "swerebench", "xingyaoww")


def swebench_image(instance_id: str, namespace: str = "swebench") -> str:
    """`swebench_image("sympy__sympy-20590") == "swebench/sweb.eval.x86_64.sympy_1776_sympy-20590:latest"`."""
    return f"{namespace}/sweb.eval.x86_64.{instance_id.lower().replace('__', '_1776_')}:latest"


def django_label(path: str) -> str:
    """A test file as a Django test label: `tests/a/b.py` -> `a.b`.

    >>> django_label("tests/template_tests/filter_tests/test_floatformat.py")
    'template_tests.filter_tests.test_floatformat'
    """
    return path.removeprefix("tests/").removesuffix(".py").replace("/", ".")


class SweBench(Importer):
    """SWE-bench rows (every row no other format claims)."""

    name = "swe-bench"
    detect_rank = 100
    namespace: ClassVar[str] = "swebench"  # the image rule's default registry namespace

    @classmethod
    def matches(cls, row: dict[str, Any]) -> bool:
        return True

    def image_for(self, row: dict[str, Any], iid: str) -> Any:
        return swebench_image(iid, self.options.namespace or self.namespace)

    def uses_conda(self, image: str) -> bool:
        return image.split("/")[0] in CONDA_NAMESPACES

    def test_command(self, row: dict[str, Any], files: list[str], install: dict[str, Any]) -> tuple[str, str]:
        spec = spec_for(row["repo"], row.get("version"))
        parser = (spec.log_parser if spec else None) or "parse_log_pytest"
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
