"""What a test that needs vLLM does when vLLM is missing: skip on a developer's machine, fail under CI=true.

The suite runs in a subprocess with a plugin that makes the vLLM probe answer "not installed", so the check holds
on a machine that has vLLM (make setup installs it). The vLLM server fixture is never reached: the setup hook fails
or skips the test first.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

TEST = "tests/vllm/test_rl_loop.py::test_reload_in_place_serves_the_new_weights_and_the_probe_proves_it"
HIDE_VLLM = """
import tests.conftest as c
c._ENGINES["vllm"] = (lambda: False, "vLLM is not installed (hidden by the test)")
c._REACHABLE.pop("vllm", None)
"""


def _pytest_without_vllm(tmp_path, ci: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "hide_vllm.py").write_text(HIDE_VLLM)
    env = {**os.environ, "CI": ci, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "hide_vllm", "-q", "-p", "no:cacheprovider", TEST],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize(("ci", "rc", "says"), [("true", 1, "1 error"), ("", 0, "1 skipped")])
def test_a_vllm_test_fails_in_ci_and_skips_elsewhere_when_vllm_is_missing(tmp_path, ci, rc, says):
    res = _pytest_without_vllm(tmp_path, ci)
    out = res.stdout + res.stderr
    assert res.returncode == rc, out
    assert says in out, out
    assert "vLLM is not installed (hidden by the test)" in out, out
    assert "vLLM server did not start" not in out, out  # the server fixture was never set up
