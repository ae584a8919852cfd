"""The sandbox contract, one suite over the registry itself (`swerl_cli.sandbox.choices()`): docker and podman (real
engines), local, and any backend registered from outside (tests/sandbox/conftest.py registers
tests/sandbox/plugin_backend.py as `scratch`; this file names none of them). Framing, exit codes, timeouts, output
cap, persistence, and for the image backends limits, labels, cleanup on exceptions and signals, prune, and kills
from outside. A backend whose engine does not answer here is skipped with the engine's own reason."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from swerl_cli.core.errors import SandboxError
from swerl_cli.sandbox import SandboxBackend, SandboxLimits, backend_class, choices, create, open_sandbox
from swerl_cli.streams.records import Located, Task
from tests.conftest import containers
from tests.sandbox.toy import toy_task

MARKED = {"docker", "podman"}  # backends whose engine has a marker of its own (tests/conftest.py probes it once)


def _param(name: str) -> object:
    return pytest.param(name, marks=getattr(pytest.mark, name)) if name in MARKED else name


ALL = [_param(n) for n in choices()]
# Image backends (containers): the engine's CLI, named like the backend, inspects what the sandbox left behind.
ENGINES = [_param(n) for n in choices() if backend_class(n).uses_images]


def _backend(kind: str, tmp: Path) -> SandboxBackend:
    """`kind` built as a command builds it (a backend without images clones from `tmp`), or a skip saying why no
    sandbox of it can start on this machine."""
    backend = create(kind, repo_dir=str(tmp / "repo"))
    why = backend.unavailable()
    if why is not None:
        pytest.skip(f"sandbox backend {kind!r} is not available here: {why}")
    if backend.uses_images and shutil.which(kind) is None:
        pytest.skip(f"no {kind} CLI to inspect the {kind} backend's containers")
    return backend


def started(kind: str, request: pytest.FixtureRequest, tmp: Path) -> tuple[Task, SandboxBackend]:
    """The toy task for backend `kind` and the backend: an image backend gets the toy image built in its engine
    (cached by name), another one a toy repository to clone."""
    backend = _backend(kind, tmp)
    if not backend.uses_images:
        return Task.from_json(Located("t", 1, toy_task(tmp, "unused"))), backend
    from swerl_cli.sandbox.build import build_image

    task = request.getfixturevalue("toy_t")
    build_image(task, backend, hygiene=False)
    return task, backend


@pytest.fixture(scope="module", params=ALL)
def sb(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    task, backend = started(request.param, request, tmp_path_factory.mktemp(request.param))
    limits = SandboxLimits(output_cap_bytes=1000)
    with open_sandbox(task, backend, run_id="pytest-sandbox", limits=limits) as box:
        yield box


@pytest.fixture
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Task, SandboxBackend]:
    """The toy task in the image backend of the test's `kind` parameter, and that backend."""
    return started(request.node.callspec.params["kind"], request, tmp_path)


@pytest.fixture
def engine_toy(engine: tuple[Task, SandboxBackend]) -> Task:
    return engine[0]


@pytest.fixture
def backend(engine: tuple[Task, SandboxBackend]) -> SandboxBackend:
    return engine[1]


def test_run_output_exact_without_trailing_newline(sb) -> None:
    res = sb.run("printf 'a\\nb'")
    assert (res.exit_code, res.output) == (0, "a\nb")


def test_run_output_containing_framing_text_is_kept(sb) -> None:
    res = sb.run("echo '__SWERL_deadbeef SWERL_READY 0 /x'; echo __swerl_run 3 a b")
    assert res.output == "__SWERL_deadbeef SWERL_READY 0 /x\n__swerl_run 3 a b\n"
    assert sb.run("echo next").output == "next\n"


@pytest.mark.parametrize("code", [0, 1, 2, 42, 255])
def test_run_exit_codes_are_exact(sb, code: int) -> None:
    assert sb.run(f"(exit {code})").exit_code == code


def test_stderr_is_merged_and_stdin_is_empty(sb) -> None:
    res = sb.run("echo out; echo err >&2; cat; echo done")
    assert res.output == "out\nerr\ndone\n"


def test_cwd_and_env_persist(sb) -> None:
    sb.run("cd /tmp && export SWERL_T=42 && LOCAL_V=7")
    assert sb.run('pwd; echo "$SWERL_T $LOCAL_V"').output == "/tmp\n42 7\n"
    sb.run(f"cd {sb.workdir}")


def test_timeout_kills_process_group_and_shell_survives(sb) -> None:
    res = sb.run("sleep 300 & sleep 200; echo never", timeout_s=1)
    assert res.timed_out
    assert res.exit_code == 124
    assert "never" not in res.output
    # the shell's own children are gone (on the local backend other processes of this machine may sleep too)
    assert sb.run("pgrep -x -P $$ sleep | wc -l").output.strip() == "0"
    res = sb.run("while :; do :; done", timeout_s=1)  # a pure-builtin loop is interrupted too
    assert res.timed_out
    assert sb.run("echo alive; pwd").output == f"alive\n{sb.workdir}\n"


def test_a_job_that_dies_late_after_a_timeout_leaves_no_notice_in_the_next_output(sb) -> None:
    # the background job outlives the command by 0.1 s after the timeout's TERM; bash reports its death
    # ("[1]+ Killed ...") at the next command it runs, which was the next command's output (a flake of the test above)
    slow = "bash -c 'trap \"sleep 0.1; kill -KILL \\$\\$\" TERM; sleep 300 & wait' & sleep 200"
    for _ in range(3):
        assert sb.run(slow, timeout_s=1).timed_out
        assert sb.run("sleep 0.3; echo clean").output == "clean\n"


def test_output_cap_keeps_head_and_tail(sb) -> None:
    res = sb.run("echo START; head -c 50000 /dev/zero | tr '\\0' x; echo; echo END")
    assert res.output.startswith("START\n")
    assert res.output.endswith("END\n")
    assert "bytes truncated ...]" in res.output
    assert len(res.output) < 1200


def test_write_and_read_binary_file(sb) -> None:
    data = bytes(range(256)) * 4
    sb.write_file("/tmp/sub/dir/blob.bin", data)
    assert sb.read_file("/tmp/sub/dir/blob.bin") == data
    with pytest.raises(SandboxError):
        sb.read_file("/nonexistent")


def test_exit_in_command_restarts_shell_keeping_cwd(sb) -> None:
    sb.run("cd /etc")
    assert sb.run("exit 3").exit_code == 3
    assert sb.run("pwd").output == "/etc\n"
    sb.run(f"cd {sb.workdir}")


@pytest.mark.parametrize("kind", ENGINES)
def test_container_killed_from_outside_is_an_error_not_a_fresh_shell(
    kind: str, engine_toy: Task, backend: SandboxBackend
) -> None:
    """A `docker kill` between commands used to restart the shell and report the next command as exit 137 with no
    output, which the agent saw as "ran successfully": a killed sandbox ended as a scored (0) episode. podman closes
    the attach stream with the container, and its event log (read its own way) names the kill but not the signal."""
    with open_sandbox(engine_toy, backend, run_id="pytest-killed") as box:
        assert box.run("kill -9 $$").exit_code == 137  # the agent killing its own shell: a fresh one, as before
        assert box.run("echo alive").output == "alive\n"
        subprocess.run([kind, "kill", box.cid], check=True, capture_output=True)
        why = r"stopped from outside \(killed, signal 9" if kind == "docker" else r"stopped from outside \(killed\)"
        with pytest.raises(SandboxError, match=why):
            box.run("echo after")


def test_diff_includes_new_files_and_excludes_test_files(sb) -> None:
    sb.run("echo 'x = 1' >> calc.py && echo new > added.py && echo '# t' >> tests/test_calc.py")
    diff = sb.diff()
    sb.run("git checkout -q -- . && rm -f added.py")
    assert "+x = 1" in diff
    assert "added.py" in diff
    assert "tests/test_calc.py" not in diff


@pytest.mark.parametrize("kind", ENGINES)
def test_container_has_limits_labels_and_no_network(kind: str, engine_toy: Task, backend: SandboxBackend) -> None:
    lim = SandboxLimits(memory_mb=256, cpus=0.5, pids=64)
    with open_sandbox(engine_toy, backend, run_id="pytest-limits", limits=lim) as box:
        attrs = box.container.attrs
        assert box.run("ls /sys/class/net").output.split() == ["lo"]
        assert box.run("cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max").output == "64\n"
    host = attrs["HostConfig"]
    assert host["Memory"] == 256 * 2**20
    assert host["NanoCpus"] == 500_000_000
    assert host["PidsLimit"] == 64
    assert host["NetworkMode"] == "none"
    assert attrs["Config"]["Labels"]["swerl.run"] == "pytest-limits"
    assert attrs["Config"]["Labels"]["swerl.instance"] == engine_toy.instance_id
    assert containers("swerl.run=pytest-limits", kind) == []


@pytest.mark.parametrize("kind", ENGINES)
def test_container_removed_on_exception(kind: str, engine_toy: Task, backend: SandboxBackend) -> None:
    seen = []

    def body() -> None:
        with open_sandbox(engine_toy, backend, run_id="pytest-exc"):
            seen.extend(containers("swerl.run=pytest-exc", kind))
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        body()
    assert len(seen) == 1
    assert containers("swerl.run=pytest-exc", kind) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("kind", ENGINES)
def test_container_removed_on_signal(kind: str, engine_toy: Task, tmp_path, sig: int) -> None:
    import orjson

    rec = {k: getattr(engine_toy, k) for k in Task._REQUIRED}
    (tmp_path / "task.json").write_bytes(orjson.dumps(rec))
    script = textwrap.dedent(f"""
        import orjson, sys, time
        from swerl_cli.streams.records import Located, Task
        from swerl_cli.sandbox import create, open_sandbox
        t = Task.from_json(Located("t", 1, orjson.loads(open({str(tmp_path / "task.json")!r}, "rb").read())))
        with open_sandbox(t, create({kind!r}), run_id="pytest-sig-{int(sig)}", hygiene=False) as sb:
            print("ready", flush=True)
            sb.run("sleep 60", timeout_s=120)
    """)
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=os.environ.copy()) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        assert containers(f"swerl.run=pytest-sig-{int(sig)}", kind)
        proc.send_signal(sig)
        proc.wait(timeout=60)
    assert proc.returncode != 0
    assert containers(f"swerl.run=pytest-sig-{int(sig)}", kind) == []


@pytest.mark.parametrize("kind", ENGINES)
def test_prune_removes_by_run_label(kind: str, engine_toy: Task, backend: SandboxBackend) -> None:
    box = backend.start(engine_toy, None, "pytest-prune", None)
    other = backend.start(engine_toy, None, "pytest-prune-other", None)
    try:
        assert len(backend.prune("pytest-prune")) == 1
        assert containers("swerl.run=pytest-prune", kind) == []
        assert len(containers("swerl.run=pytest-prune-other", kind)) == 1
    finally:
        box.close()
        other.close()


@pytest.mark.parametrize("kind", ENGINES)
def test_prune_stale_keeps_live_owners_sandboxes(kind: str, engine_toy: Task, backend: SandboxBackend) -> None:
    run = f"pytest-stale-{os.getpid()}"  # unique: two suites on one engine must not count each other's
    live = backend.start(engine_toy, None, run, None)  # owned by this (live) process
    dead_owner = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    labels = ["swerl.managed=1", f"swerl.run={run}", f"swerl.pid={dead_owner.stdout.strip()}"]
    cmd = [kind, "run", "-d", "--network", "none", *(f"--label={label}" for label in labels)]
    cmd += ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"] if kind == "podman" else []
    cid = subprocess.run([*cmd, engine_toy.image, "sleep", "60"], capture_output=True, text=True, check=True)
    try:
        assert backend.remove_stale(run) == 1
        assert len(containers(f"swerl.run={run}", kind)) == 1  # the live one survives
    finally:
        live.close()
        subprocess.run([kind, "rm", "-f", cid.stdout.strip()], capture_output=True)


@pytest.mark.parametrize("kind", ENGINES)
def test_prune_survives_a_container_removed_between_list_and_remove(
    kind: str, engine_toy: Task, backend: SandboxBackend
) -> None:
    """The race of a grader pruning stale sandboxes while the collector beside it in the pipe closes its own:
    the engine lists a container that is gone a moment later. Pruning skips it and removes the rest."""
    from swerl_cli.sandbox import engine_client
    from swerl_cli.sandbox.engine import prune_containers

    run = f"pytest-race-{os.getpid()}"
    client = engine_client(backend)
    listed = client.api.containers
    gone = {"Id": "f" * 64, "Names": ["/swerl-gone-already"], "Labels": {"swerl.managed": "1", "swerl.run": run}}
    client.api.containers = lambda *a, **k: [gone, *listed(*a, **k)]
    box = backend.start(engine_toy, None, run, None)
    try:
        removed = prune_containers(client, run)
        assert len(removed) == 1
        assert removed[0] != "swerl-gone-already"
        assert containers(f"swerl.run={run}", kind) == []
    finally:
        box.close()


@pytest.mark.parametrize("kind", ENGINES)
def test_missing_image_is_one_line_sandbox_error(kind: str, engine_toy: Task, backend: SandboxBackend) -> None:
    bad = Task(**{**{k: getattr(engine_toy, k) for k in Task._REQUIRED}, "image": "swerl-no-such:x"})
    with pytest.raises(SandboxError, match="could not pull swerl-no-such:x from docker.io"):
        open_sandbox(bad, backend, run_id="pytest-missing").__enter__()
    assert containers("swerl.run=pytest-missing", kind) == []
