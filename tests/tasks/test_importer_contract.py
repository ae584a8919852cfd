"""The contract every registered importer keeps, parametrized over the importer registry itself (an importer
registered before collection is tested with no edit here; its rows come from its module's SAMPLES,
tests/contracts.py). Rows only, no files and no subprocess.

- it is an `Importer` registered under its own name, with its own frozen `Options` (an `ImporterOptions`), built
  from its defaults and from the command's options read by name;
- detection agrees with matching: `--dataset auto` gives each of its sample rows to it, and none of the other
  importers' sample rows;
- its output is a valid task record: the stream's checks (`Task.from_json`, the values docker and git would
  refuse) pass, it names its dataset, and `auto` gives the same record;
- a config section naming an option it does not have is refused in one line.
"""

from __future__ import annotations

import pytest

from swerl_cli.core.errors import ConfigError
from swerl_cli.streams.records import TASK, Located, Task, check_schema
from swerl_cli.streams.task_fields import task_row_error
from swerl_cli.tasks.importers import IMPORTERS, Importer, ImporterOptions, choices, create, detect, import_row
from tests.contracts import check_options, one_line, samples
from tests.tasks.test_import import REBENCH, SMITH, SWEBENCH

GYM = {**{k: v for k, v in SWEBENCH.items() if k != "environment_setup_commit"}, "instance_id": "getmoto__moto-5752",
       "repo": "getmoto/moto", "FAIL_TO_PASS": ["tests/test_x.py::t"]}  # fmt: skip
BUILTIN = {"swe-bench": [SWEBENCH], "swe-rebench": [REBENCH], "swe-gym": [GYM], "swe-smith": [SMITH]}
NAMES = choices()


def _rows(name: str) -> list[dict]:
    return samples(IMPORTERS, name, BUILTIN)


def test_the_registry_has_every_builtin_importer():
    assert set(BUILTIN) <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_importer_is_registered_with_its_own_options(name):
    cls = IMPORTERS.cls(name)
    assert issubclass(cls, Importer)
    assert cls.name == name
    check_options(cls.Options, ImporterOptions)
    assert isinstance(create(name).options, cls.Options)
    built = create(name, namespace="mirror", workdir="/src", no_such_flag=1, sandbox="docker")
    assert (built.options.namespace, built.options.workdir) == ("mirror", "/src")


@pytest.mark.parametrize("name", NAMES)
def test_detection_takes_its_own_rows_and_no_other_importers(name):
    for row in _rows(name):
        assert detect(row) == name, f"auto gives a {name} row to {detect(row)}"
    for other in NAMES:
        if other != name:
            for row in _rows(other):
                assert detect(row) != name, f"auto gives a {other} row to {name}"


@pytest.mark.parametrize("name", NAMES)
def test_output_is_a_valid_task_record(name):
    for line, row in enumerate(_rows(name), 1):
        loc = Located("rows.jsonl", line, row)
        rec = import_row(loc, dataset=name)
        out = Located("tasks.jsonl", line, rec)
        assert check_schema(out, TASK) is not None
        task = Task.from_json(out)
        assert task_row_error(out, task, build=True) is None
        assert rec["dataset"] == name
        assert import_row(loc) == rec  # auto: the same record


@pytest.mark.parametrize("name", NAMES)
def test_an_unknown_option_in_a_config_section_is_one_line(name):
    with pytest.raises(ConfigError) as info:
        IMPORTERS.cls(name).Options.from_section({"no_such_option": 1}, f"importer {name}")
    assert "no_such_option" in one_line(info.value)


def test_an_unknown_importer_is_one_line_naming_the_choices():
    with pytest.raises(ConfigError) as info:
        create("nope")
    assert one_line(info.value) == f"--dataset must be one of auto, {', '.join(choices())}; got 'nope'"
