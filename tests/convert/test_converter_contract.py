"""The contract every registered converter keeps, parametrized over the converter registry itself (a converter
registered before collection is tested with no edit here; its samples come from its module's SAMPLES,
tests/contracts.py). Samples are the fixtures written in each real format (a file, or rows written as JSON Lines).

- it is a `Converter` registered under its own name, with its own frozen `Options` (a `ConverterOptions`), built
  from its defaults and from the command's options read by name;
- detection agrees with matching: `--from auto` gives every record of its samples to it, none of the other
  converters' samples, and `--from NAME` gives the same records;
- its output is a valid record: the stream's checks (schema, id, the prediction a record becomes, a graded
  record's reader) pass on each record, read back from its JSON line;
- a config section naming an option it does not have is refused in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from swerl_cli.convert import FORMATS, Converter, ConverterOptions, convert_paths
from swerl_cli.convert.predictions import to_prediction
from swerl_cli.convert.registry import choices, create
from swerl_cli.core.errors import ConfigError, InputError
from swerl_cli.streams.graded import read_graded
from swerl_cli.streams.records import GRADED, TRAJECTORY, Located, check_schema
from swerl_cli.streams.trajectories import trajectory_id
from tests.contracts import check_options, one_line, samples

FIX = Path(__file__).parent / "fixtures"
INTEROP = Path(__file__).parent / "interop"
_SFT = [orjson.loads(line) for line in (FIX / "ft_rows.jsonl").read_bytes().splitlines()[:3:2]]  # rows 1, 3: usable
BUILTIN: dict[str, list[Any]] = {
    "swe-agent": [FIX / "swerl-examples__bizdays-1.traj", FIX / "swerl-examples__memo-1.traj"],
    "mini-swe-agent": [FIX / "swerl-examples__pagesel-1.traj.json", FIX / "swerl-examples__tinycsv-1.traj.json"],
    "openhands": [FIX / "output.jsonl"],
    "sft": _SFT,
    "preds": [INTEROP / "all_preds.jsonl", INTEROP / "preds.json"],
    "swebench-report": [INTEROP / "org__model-1.run-7.json"],
}
NAMES = choices()


def _paths(name: str, tmp_path: Path) -> list[str]:
    """The sample files of `name`: files as they are, rows written to one JSON Lines file."""
    items = samples(FORMATS, name, BUILTIN)
    paths = [str(p) for p in items if isinstance(p, Path)]
    rows = [r for r in items if not isinstance(r, Path)]
    if rows:
        src = tmp_path / f"{name}-rows.jsonl"
        src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
        paths.append(str(src))
    return paths


def _records(paths: list[str], fmt: str) -> list[dict[str, Any]]:
    out = list(convert_paths(paths, fmt))
    bad = [str(r) for r in out if not isinstance(r, dict)]
    assert not bad, f"--from {fmt}: {bad}"
    assert out, f"--from {fmt}: no records"
    return out  # type: ignore[return-value]


def test_the_registry_has_every_builtin_converter():
    assert set(BUILTIN) <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_converter_is_registered_with_its_own_options(name):
    cls = FORMATS.cls(name)
    assert issubclass(cls, Converter)
    assert cls.name == name
    check_options(cls.Options, ConverterOptions)
    assert isinstance(create(name).options, cls.Options)
    assert create(name, rewrite=False, no_such_flag=1).options.rewrite is False


@pytest.mark.parametrize("name", NAMES)
def test_detection_takes_its_own_samples_and_no_other_converters(name, tmp_path):
    mine = _records(_paths(name, tmp_path), "auto")
    assert {r["source"]["format"] for r in mine} == {name}
    assert _records(_paths(name, tmp_path), name) == mine  # --from NAME: the same records
    for other in NAMES:
        if other != name:
            theirs = list(convert_paths(_paths(other, tmp_path), "auto"))
            assert all(isinstance(r, dict) and r["source"]["format"] != name for r in theirs), (other, theirs[:1])


@pytest.mark.parametrize("name", NAMES)
def test_output_is_a_valid_record(name, tmp_path):
    for line, rec in enumerate(_records(_paths(name, tmp_path), name), 1):
        loc = Located("out.jsonl", line, orjson.loads(orjson.dumps(rec)))  # as the next command reads it
        assert check_schema(loc, TRAJECTORY, GRADED) is not None
        assert loc.obj["id"] == trajectory_id(loc.obj["instance_id"], loc.obj["run"], loc.obj["sample"])
        assert to_prediction(loc, "m")["instance_id"] == loc.obj["instance_id"]
        if loc.obj["schema"].startswith(GRADED):
            assert read_graded(loc).resolved in (True, False)
        else:
            assert isinstance(loc.obj["messages"], list)
            assert isinstance(loc.obj["stats"], dict)


@pytest.mark.parametrize("name", NAMES)
def test_an_unknown_option_in_a_config_section_is_one_line(name):
    with pytest.raises(ConfigError) as info:
        FORMATS.cls(name).Options.from_section({"no_such_option": 1}, f"converter {name}")
    assert "no_such_option" in one_line(info.value)


def test_an_unknown_converter_is_one_line_naming_the_choices():
    with pytest.raises(ConfigError) as info:
        create("nope")
    assert one_line(info.value) == f"unknown format 'nope'; choose one of {', '.join(choices())}"
    assert not isinstance(info.value, InputError)
