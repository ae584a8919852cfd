"""The suite's budget guard (tests/budget.py) in a real pytest run: the slowest items and the total are printed,
and an unlisted test over the limit fails the session while a listed one does not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.budget import SLOW, allowed
from tests.conftest import ROOT

CONFTEST = (
    "from tests.budget import Budget\n\ndef pytest_configure(config):\n    config.pluginmanager.register(Budget())\n"
)
SLEEPY = "import time\n\ndef test_sleeps():\n    time.sleep(0.6)\n\ndef test_quick():\n    pass\n"


def _pytest(d: Path, limit: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "SWERL_TEST_LIMIT_S": limit}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(d)],
        capture_output=True, text=True, env=env, cwd=d, timeout=120,
    )  # fmt: skip


def test_an_unlisted_test_over_the_limit_fails_the_session_and_the_slowest_are_printed(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_sleepy.py").write_text(SLEEPY)
    res = _pytest(tmp_path, "0.3")
    assert res.returncode == 1, res.stdout
    assert "2 passed" in res.stdout
    assert "suite budget: 15 slowest of 2" in res.stdout
    assert "test_sleepy.py::test_sleeps took" in res.stdout
    assert "min wall" in res.stdout
    ok = _pytest(tmp_path, "5")
    assert ok.returncode == 0, ok.stdout
    assert "OVER THE LIMIT" not in ok.stdout


def test_every_listed_slow_item_has_a_reason_and_names_existing_tests() -> None:
    for prefix, why in SLOW.items():
        assert len(why) > 20, prefix
        assert (ROOT / prefix.split("::")[0]).exists(), prefix
    assert allowed("tests/vllm/test_drain.py::x") is not None
    assert allowed("tests/streams/test_x.py::y") is None
