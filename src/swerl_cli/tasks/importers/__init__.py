"""`swerl tasks import`: dataset rows -> swerl.task/1, one importer module per dataset format.

IMPORTERS (`--dataset` name -> "module:Class", an `Importer` of base.py) is the only registry; nothing outside an
importer's module names it, and a plugin or a test adds one with `register_importer`. `create(name, **options)`
builds one from its own `Options`; `choices()` lists them. `--dataset auto` asks every
registered importer's `matches(row)`, lowest `detect_rank` first: SWE-rebench rows carry `install_config`,
SWE-smith rows an `image_name` and no `test_patch`, SWE-Gym rows no `environment_setup_commit`; SWE-bench takes
the rest. A row that is already a swerl task record passes through (its schema version checked, never rewritten).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from swerl_cli.core import plugins
from swerl_cli.core.errors import ConfigError
from swerl_cli.core.plugins import Registry
from swerl_cli.streams.jsonl import read_rows as read_rows
from swerl_cli.streams.records import TASK, Located, Task, check_schema
from swerl_cli.streams.task_fields import task_row_error
from swerl_cli.tasks.importers.base import CONDA as CONDA  # re-exported: the package is the importers' API
from swerl_cli.tasks.importers.base import Importer
from swerl_cli.tasks.importers.base import ImporterOptions as ImporterOptions
from swerl_cli.tasks.importers.smith import reverse_patch as reverse_patch
from swerl_cli.tasks.importers.swebench import swebench_image as swebench_image

IMPORTERS = Registry(
    {
        "swe-bench": "swerl_cli.tasks.importers.swebench:SweBench",
        "swe-rebench": "swerl_cli.tasks.importers.rebench:SweRebench",
        "swe-gym": "swerl_cli.tasks.importers.gym:SweGym",
        "swe-smith": "swerl_cli.tasks.importers.smith:SweSmith",
    },
    unknown="--dataset must be one of auto, {choices}; got {name!r}",
)
register_importer = IMPORTERS.register


def choices() -> list[str]:
    """The registered importers (`--dataset` also takes `auto`)."""
    return IMPORTERS.choices()


def dataset_names() -> tuple[str, ...]:
    """The values `--dataset` takes: auto, then the registered importers."""
    return ("auto", *choices())


def create(name: str, **options: Any) -> Importer:
    """The importer `name`, built from its own `Options` read by name from `options` (others, and None, ignored);
    ConfigError naming the choices for an unknown name."""
    importer: Importer = IMPORTERS.create(name, **options)
    return importer


def detect(row: dict[str, Any]) -> str:
    """The registered dataset format a row looks like (see the module doc)."""
    cls = plugins.detect((IMPORTERS.cls(n) for n in IMPORTERS), row)
    if cls is None:
        raise ConfigError(f"no importer of {', '.join(IMPORTERS)} takes this row; pass --dataset")
    name: str = cls.name
    return name


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
    if dataset != "auto":
        IMPORTERS.cls(dataset)  # an unknown --dataset is a ConfigError, whatever the row
    if "schema" in loc.obj:  # a swerl task record: its version must be one this swerl reads, never rewritten
        check_schema(loc, TASK)
        task = Task.from_json(loc)
    else:
        kind = detect(loc.obj) if dataset == "auto" else dataset
        task = create(kind, namespace=namespace, workdir=workdir).to_task(loc)
    bad = task_row_error(loc, task, build=True, allowed=allowed_sources)
    if bad is not None:
        raise bad
    return task.to_json()
