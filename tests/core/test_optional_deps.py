"""A missing optional package is one stderr line with the install command, never an ImportError traceback."""

from __future__ import annotations

import sys

import orjson
import pytest
from typer.testing import CliRunner

from swerl_cli.cli import app
from swerl_cli.core.errors import OPTIONAL_DEPENDENCIES, missing_dependency
from tests.records import graded


def test_eval_plot_without_matplotlib_is_one_line_with_the_install_command(tmp_path, monkeypatch):
    src = tmp_path / "g.jsonl"
    src.write_bytes(b"".join(orjson.dumps(graded("a", i, i == 0)) + b"\n" for i in range(2)))
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails as if not installed
    res = CliRunner().invoke(app, ["eval", str(src), "--plot", str(tmp_path / "p.png")])
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [
        "swerl eval: this needs matplotlib, which is not installed: pip install 'swerl-cli[plot]'"
    ]
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize(
    ("module", "install"),
    [
        ("torch", "'swerl-cli[train]'"),
        ("vllm", "'swerl-cli[vllm]'"),
        ("pyarrow", "'swerl-cli[parquet]'"),
        ("ray", "'swerl-cli[ray]'"),
    ],
)
def test_each_optional_package_names_its_install_command(module, install):
    err = missing_dependency(ModuleNotFoundError(f"No module named {module!r}", name=module))
    assert str(err) == f"this needs {module}, which is not installed: pip install {install}"
    assert err.exit_code == 1


def test_unknown_modules_and_missing_submodules_of_installed_packages_are_bugs(monkeypatch):
    assert missing_dependency(ModuleNotFoundError("No module named 'swerl_cli.nope'", name="swerl_cli.nope")) is None
    monkeypatch.setitem(OPTIONAL_DEPENDENCIES, "yaml", "pip install pyyaml")
    # yaml is installed: a missing submodule is a version mismatch or a bug, not a package to install
    assert missing_dependency(ModuleNotFoundError("No module named 'yaml.nope'", name="yaml.nope")) is None
    assert missing_dependency(ModuleNotFoundError("No module named 'yaml'", name="yaml")) is not None


def test_collect_with_vllm_missing_stops_before_any_episode(monkeypatch):
    from tests.conftest import EXAMPLES

    monkeypatch.setitem(sys.modules, "vllm", None)
    res = CliRunner().invoke(app, ["collect", str(EXAMPLES / "tasks.jsonl"), "--policy", "vllm", "--model", "m"])
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [
        "swerl collect: this needs vllm, which is not installed: pip install 'swerl-cli[vllm]'"
    ]
    assert res.stdout == ""


def test_first_line_quotes_a_library_error_on_one_line() -> None:
    from swerl_cli.core.errors import first_line

    assert first_line(OSError("\n  no such file\nTraceback (most recent call last): ...")) == "no such file"
    assert first_line(TimeoutError()) == "TimeoutError"
