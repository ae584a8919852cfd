"""The guard's interpreter half (guard_runtime.py) and runner configuration read as TOML (infra.py), without an engine.
The end-to-end attacks on them are the corpus's rt_* (test_hacks.py)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from swerl_cli.grading import guard_runtime as rt
from swerl_cli.grading import infra

BASE = '[project]\nname = "x"\n\n[tool.pytest.ini_options]\npythonpath = ["."]\n'


def test_pyproject_runner_table_is_compared_in_every_toml_spelling() -> None:
    hidden = (
        '[project]\nname = "x"\n\n[tool.notes]\ntext = """\n[tool.pytest.ini_options]\npythonpath = ["."]\n#"""\n\n'
        '[tool."py\\u0074est".ini_options]\npythonpath = ["."]\naddopts = "-p evil"\n'
    )
    dotted = BASE.replace("[tool.pytest.ini_options]\n", "[tool]\npytest.ini_options.addopts = '-p evil'\n[x]\n")
    spaced = BASE.replace("[tool.pytest.ini_options]", '[ tool . "pytest" . ini_options ]')
    assert infra.runner_sections(BASE, True) == infra.runner_sections(spaced, True)  # the same table, unchanged
    for spelled in (hidden, dotted, spaced + 'addopts = "-p evil"\n'):
        assert infra.runner_sections(BASE, True) != infra.runner_sections(spelled + "\n# x\n", True), spelled
    assert infra.runner_sections(BASE) == infra.runner_sections(hidden)  # the INI reading alone misses it
    honest = BASE.replace('name = "x"', 'name = "y"\nversion = "2"')
    assert infra.runner_sections(BASE, True) == infra.runner_sections(honest, True)
    assert "toml:unparsed" in infra.runner_sections(BASE + "[broken\n", True)


def test_the_guards_own_encoder_and_realpath_match_the_libraries(tmp_path: Path) -> None:
    msg = {"t": "test", "id": 'a.py::t[\x00"\\\u00fc\ud800]', "n": 3, "ok": True}
    assert orjson.loads(rt.encode(msg).replace(b"\\ud800", b"?")) == {**msg, "id": 'a.py::t[\x00"\\\u00fc?]'}
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.py").write_text("x")
    os.symlink(tmp_path / "d", tmp_path / "link")
    os.symlink("../link/f.py", tmp_path / "d" / "rel")
    for p in ("link/f.py", "d/rel", "link/../d/./f.py", "missing/x"):
        assert rt.realpath(str(tmp_path / p)) == os.path.realpath(tmp_path / p), p
