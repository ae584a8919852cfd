"""DockerSandbox against the real engine: framing, exit codes, timeouts, output cap, persistence, cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from swerl_cli.errors import SandboxError
from swerl_cli.records import Task
from swerl_cli.sandbox import SandboxLimits, open_sandbox
from tests.conftest import containers

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def sb(toy_t: Task):
    with open_sandbox(toy_t, run_id="pytest-sandbox", limits=SandboxLimits(output_cap_bytes=1000)) as box:
        yield box


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
    sb.run("cd /testbed")


def test_timeout_kills_process_group_and_shell_survives(sb) -> None:
    res = sb.run("sleep 300 & sleep 200; echo never", timeout_s=1)
    assert res.timed_out
    assert res.exit_code == 124
    assert "never" not in res.output
    assert sb.run("pgrep -x sleep | wc -l").output.strip() in ("0", "1")  # only the init's `sleep infinity`
    res = sb.run("while :; do :; done", timeout_s=1)  # a pure-builtin loop is interrupted too
    assert res.timed_out
    assert sb.run("echo alive; pwd").output == "alive\n/testbed\n"


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
    sb.run("cd /testbed")


def test_container_killed_from_outside_is_an_error_not_a_fresh_shell(toy_t: Task) -> None:
    """A `docker kill` between commands used to restart the shell and report the next command as exit 137 with no
    output, which the agent saw as "ran successfully": a killed sandbox ended as a scored (0) episode."""
    with open_sandbox(toy_t, run_id="pytest-killed") as box:
        assert box.run("kill -9 $$").exit_code == 137  # the agent killing its own shell: a fresh one, as before
        assert box.run("echo alive").output == "alive\n"
        subprocess.run(["docker", "kill", box.cid], check=True, capture_output=True)
        with pytest.raises(SandboxError, match=r"stopped from outside \(killed, signal 9"):
            box.run("echo after")


def test_diff_includes_new_files_and_excludes_test_files(toy_t: Task) -> None:
    with open_sandbox(toy_t, run_id="pytest-diff") as box:
        box.run("echo 'x = 1' >> calc.py && echo new > added.py && echo '# t' >> tests/test_calc.py")
        diff = box.diff()
    assert "+x = 1" in diff
    assert "added.py" in diff
    assert "tests/test_calc.py" not in diff


def test_container_has_limits_labels_and_no_network(toy_t: Task) -> None:
    lim = SandboxLimits(memory_mb=256, cpus=0.5, pids=64)
    with open_sandbox(toy_t, run_id="pytest-limits", limits=lim) as box:
        attrs = box.container.attrs
        assert box.run("ls /sys/class/net").output.split() == ["lo"]
    host = attrs["HostConfig"]
    assert host["Memory"] == 256 * 2**20
    assert host["NanoCpus"] == 500_000_000
    assert host["PidsLimit"] == 64
    assert host["NetworkMode"] == "none"
    assert attrs["Config"]["Labels"]["swerl.run"] == "pytest-limits"
    assert attrs["Config"]["Labels"]["swerl.instance"] == toy_t.instance_id
    assert containers("swerl.run=pytest-limits") == []


def test_container_removed_on_exception(toy_t: Task) -> None:
    seen = []

    def body() -> None:
        with open_sandbox(toy_t, run_id="pytest-exc"):
            seen.extend(containers("swerl.run=pytest-exc"))
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        body()
    assert len(seen) == 1
    assert containers("swerl.run=pytest-exc") == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_container_removed_on_signal(toy: dict, tmp_path, sig: int) -> None:
    import orjson

    (tmp_path / "task.json").write_bytes(orjson.dumps(toy))
    script = textwrap.dedent(f"""
        import orjson, sys, time
        from swerl_cli.records import Located, Task
        from swerl_cli.sandbox import open_sandbox
        t = Task.from_json(Located("t", 1, orjson.loads(open({str(tmp_path / "task.json")!r}, "rb").read())))
        with open_sandbox(t, run_id="pytest-sig-{int(sig)}") as sb:
            print("ready", flush=True)
            sb.run("sleep 60", timeout_s=120)
    """)
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=os.environ.copy()) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        assert containers(f"swerl.run=pytest-sig-{int(sig)}")
        proc.send_signal(sig)
        proc.wait(timeout=60)
    assert proc.returncode != 0
    assert containers(f"swerl.run=pytest-sig-{int(sig)}") == []


def test_prune_removes_by_run_label(toy_t: Task) -> None:
    from swerl_cli.sandbox.docker import DockerSandbox, prune

    box = DockerSandbox(toy_t, run_id="pytest-prune")
    other = DockerSandbox(toy_t, run_id="pytest-prune-other")
    try:
        assert len(prune("pytest-prune")) == 1
        assert containers("swerl.run=pytest-prune") == []
        assert len(containers("swerl.run=pytest-prune-other")) == 1
    finally:
        box.close()
        other.close()


def test_prune_stale_keeps_live_owners_sandboxes(toy_t: Task) -> None:
    from swerl_cli.sandbox.docker import DockerSandbox, prune

    live = DockerSandbox(toy_t, run_id="pytest-stale")  # owned by this (live) process
    dead_owner = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    cid = subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--network",
            "none",
            "--label",
            "swerl.managed=1",
            "--label",
            "swerl.run=pytest-stale",
            "--label",
            f"swerl.pid={dead_owner.stdout.strip()}",
            toy_t.image,
            "sleep",
            "60",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        removed = prune("pytest-stale", stale_only=True)
        assert len(removed) == 1
        assert len(containers("swerl.run=pytest-stale")) == 1  # the live one survives
    finally:
        live.close()
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True)


def test_missing_image_is_one_line_sandbox_error(toy_t: Task) -> None:
    bad = Task(**{**{k: getattr(toy_t, k) for k in toy_t.__slots__ if k != "_REQUIRED"}, "image": "swerl-no-such:x"})
    with pytest.raises(SandboxError, match="could not pull swerl-no-such:x from docker.io"):
        open_sandbox(bad, run_id="pytest-missing").__enter__()
    assert containers("swerl.run=pytest-missing") == []
