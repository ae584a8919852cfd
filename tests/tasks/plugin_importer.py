"""A dataset importer defined outside swerl: the "where to add an importer" proof (tests/tasks/test_importers.py
registers it). Its rows: `{"toy_id", "commit", "fix", "tests": [...], "issue"}`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swerl_cli.tasks.importers import Importer, ImporterOptions


@dataclass(frozen=True, slots=True)
class ToyOptions(ImporterOptions):
    runner: str = "python -m pytest -rA"  # besides the shared options, one of its own


class ToyImporter(Importer):
    """Rows of the toy format, claimed by their `toy_id` before any built-in format looks at them."""

    Options = ToyOptions
    name = "toy-bench"

    @classmethod
    def matches(cls, row: dict[str, Any]) -> bool:
        return "toy_id" in row

    def prepare(self, row: dict[str, Any]) -> None:
        row["instance_id"] = row.pop("toy_id")
        row["base_commit"] = row.pop("commit")
        row["patch"] = row.pop("fix")
        row["problem_statement"] = row.pop("issue", "")
        row["FAIL_TO_PASS"] = row.pop("tests")
        row["PASS_TO_PASS"] = []

    def image_for(self, row: dict[str, Any], iid: str) -> Any:
        return f"{self.options.namespace or 'toy'}/{iid.lower()}:latest"

    def test_command(self, row: dict[str, Any], files: list[str], install: dict[str, Any]) -> tuple[str, str]:
        assert isinstance(self.options, ToyOptions)
        tests = sorted({t.split("::")[0] for t in row["FAIL_TO_PASS"]})
        return f"{self.options.runner} {' '.join(tests)}", "parse_log_pytest"


# Rows of the format, for the importer contract suite (tests/tasks/test_importer_contract.py).
SAMPLES = [{"toy_id": "Toy__Lib-7", "repo": "toy/lib", "commit": "d" * 40, "fix": "diff", "tests": ["t/test_a.py::x"]}]
