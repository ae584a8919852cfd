"""The importer protocol: one dataset format's rows -> swerl.task/1 records (registered in `__init__.py`).

`Importer.to_task` is the shared mapping (docs/tasks.md): ids and repo, strings, JSON-string test lists, image,
workdir, test files, test command and log parser, `dataset`. A format overrides only what is its own: `matches`
(its detection rule for `--dataset auto`), `image_for`, `test_command`, `uses_conda`, and the `prepare` / `finish`
hooks around the mapping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from swerl_cli.core.plugins import Options, Plugin
from swerl_cli.sandbox.gitops import patch_files
from swerl_cli.streams.records import Located, Task, dict_at

CONDA = "source /opt/miniconda3/bin/activate && conda activate testbed && "
NON_TEST_EXTS = (".json", ".png", ".csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
TEST_LISTS = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")


@dataclass(frozen=True, slots=True)
class ImporterOptions(Options):
    """Options of `swerl tasks import` an importer reads: the image rule's registry namespace (None: the
    format's own) and the repository path in the image when a row names none."""

    namespace: str | None = None
    workdir: str = "/testbed"


class Importer(Plugin):
    """Base of every registered importer, built by `create(options)` from its `Options` (an `ImporterOptions`).
    `name`: its `--dataset` value; `detect_rank`: where `--dataset auto` tries its `matches` (lower first; a
    catch-all format ranks last)."""

    detect_rank: ClassVar[int] = 0
    Options: ClassVar[type[ImporterOptions]] = ImporterOptions

    @classmethod
    def matches(cls, row: dict[str, Any]) -> bool:
        """Whether `row` looks like one of this format's rows."""
        return False

    def prepare(self, row: dict[str, Any]) -> None:
        """Adjust the raw row before the shared mapping (nothing by default)."""

    def image_for(self, row: dict[str, Any], iid: str) -> Any:
        """The image of a row that names none."""
        raise NotImplementedError

    def test_command(self, row: dict[str, Any], files: list[str], install: dict[str, Any]) -> tuple[str, str]:
        """(test command with its directives, log parser name) for a row without its own test_cmd."""
        raise NotImplementedError

    def uses_conda(self, image: str) -> bool:
        """Whether the image holds the environment as the conda env `testbed` (activated before the tests)."""
        return False

    def finish(self, row: dict[str, Any]) -> None:
        """Adjust the mapped row before it becomes a task (nothing by default)."""

    def to_task(self, loc: Located) -> Task:
        """One raw row -> a Task; located one-line errors for fields it cannot use."""
        row = dict(loc.obj)
        self.prepare(row)
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
        _parse_test_lists(loc, row)
        install = dict_at(row, "install_config")
        row["image"] = _str(loc, "image", row.get("image") or row.get("image_name") or row.get("docker_image")
                            or self.image_for(row, iid))  # fmt: skip
        row["workdir"] = row.get("workdir") or self.options.workdir
        test_patch = row.get("test_patch") or ""
        if not isinstance(test_patch, str):
            raise loc.error("test_patch", "expected string")
        files = patch_files(test_patch)[0]
        row.setdefault("test_files", files)
        cmd, parser = self.test_command(row, files, install)
        if not row.get("test_cmd"):
            row["test_cmd"] = (CONDA if self.uses_conda(row["image"]) else "") + cmd
        row.setdefault("log_parser", install.get("log_parser") or parser)
        self.finish(row)
        row.setdefault("dataset", self.name)
        return Task.from_json(Located(loc.source, loc.line, row))


def _str(loc: Located, key: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and key in ("version", "created_at"):
        return str(value)
    raise loc.error(key, f"expected string, got {type(value).__name__}")


def _parse_test_lists(loc: Located, row: dict[str, Any]) -> None:
    """FAIL_TO_PASS & co given as JSON strings (as SWE-bench ships them) -> lists."""
    for key in TEST_LISTS:
        if isinstance(row.get(key), str):
            import orjson

            try:
                row[key] = orjson.loads(row[key])
            except orjson.JSONDecodeError:
                raise loc.error(key, "a string that is not a JSON list") from None
