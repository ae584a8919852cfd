"""The importer registry: a dataset format registered from a test module imports through `swerl tasks import`."""

from __future__ import annotations

import pytest

from swerl_cli.tasks.importers import IMPORTERS, dataset_names, detect
from tests.records import invoke_on_rows, registered

TOY = {"toy_id": "Toy__Lib-7", "repo": "toy/lib", "commit": "d" * 40, "fix": "diff", "tests": ["t/test_a.py::x"]}
SWEBENCH = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "a" * 40, "environment_setup_commit": "b" * 40}


@pytest.fixture
def toy():
    with registered(IMPORTERS, "toy-bench", "tests.tasks.plugin_importer:ToyImporter"):
        yield


def _run(tmp_path, rows: list[dict], *flags: str):
    return invoke_on_rows(tmp_path, ["tasks", "import"], rows, *flags)


def test_registered_importer_is_detected_and_imported_through_the_cli(tmp_path, toy) -> None:
    res, (a, b) = _run(tmp_path, [TOY, SWEBENCH])
    assert res.exit_code == 0, res.output
    assert (a["dataset"], a["instance_id"], a["base_commit"]) == ("toy-bench", "Toy__Lib-7", "d" * 40)
    assert a["image"] == "toy/toy__lib-7:latest"
    assert a["test_cmd"] == "python -m pytest -rA t/test_a.py"  # its own config's default runner, no conda
    assert b["dataset"] == "swe-bench"  # the built-in formats still detect their rows
    assert "toy-bench" in dataset_names()


def test_registered_importer_by_name_takes_the_shared_options(tmp_path, toy) -> None:
    res, (a,) = _run(tmp_path, [TOY], "--dataset", "toy-bench", "--namespace", "mirror", "--workdir", "/src")
    assert res.exit_code == 0, res.output
    assert (a["image"], a["workdir"]) == ("mirror/toy__lib-7:latest", "/src")


def test_unknown_dataset_names_every_registered_importer(tmp_path, toy) -> None:
    res, rows = _run(tmp_path, [TOY], "--dataset", "nope")
    assert (res.exit_code, rows) == (3, [])
    assert "--dataset must be one of auto, swe-bench, swe-rebench, swe-gym, swe-smith, toy-bench; got 'nope'" in (
        res.output
    )


def test_detect_tries_the_formats_in_rank_order() -> None:
    assert detect({"install_config": {}, "image_name": "x"}) == "swe-rebench"
    assert detect({"image_name": "x"}) == "swe-smith"
    assert detect({"image_name": "x", "test_patch": "p"}) == "swe-gym"
    assert detect({"environment_setup_commit": "c"}) == "swe-bench"
    assert "toy-bench" not in IMPORTERS  # the fixture's registration did not leak
