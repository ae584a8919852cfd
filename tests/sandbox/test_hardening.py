"""Sandbox hardening: the episode user of swerl-built images is not root, no capabilities, no-new-privileges;
`--sandbox-user root` is explicit and keeps only ROOT_CAPS. The command timeout still kills as that user."""

from __future__ import annotations

import orjson
import pytest

from swerl_cli.sandbox import SandboxLimits, open_sandbox
from swerl_cli.sandbox.docker import ROOT_CAPS
from swerl_cli.streams.records import Located, Task
from tests.conftest import EXAMPLES
from tests.sandbox.engines import DOCKER

pytestmark = pytest.mark.docker
CAP_BITS = {"CHOWN": 0, "DAC_OVERRIDE": 1, "FOWNER": 3, "FSETID": 4, "KILL": 5, "SETGID": 6, "SETUID": 7}


@pytest.fixture(scope="module")
def task() -> Task:
    from swerl_cli.sandbox.build import build_image

    t = Task.from_json(
        Located("examples", 1, orjson.loads((EXAMPLES / "toy-tasks.jsonl").read_bytes().splitlines()[0]))
    )
    build_image(t, DOCKER)
    return t


def _status(sb) -> dict[str, str]:
    out = sb.run("id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status", 30).output.split("\n")
    fields = dict(line.split(":\t") for line in out[1:] if ":\t" in line)
    return {"uid": out[0].strip(), **{k: v.strip() for k, v in fields.items()}}


def test_default_episode_user_is_unprivileged_and_owns_the_work_tree(task: Task) -> None:
    with open_sandbox(task, DOCKER, run_id="pytest-hardening") as sb:
        st = _status(sb)
        assert st["uid"] == "1000"
        assert int(st["CapEff"], 16) == 0
        assert int(st["CapBnd"], 16) == 0
        assert st["NoNewPrivs"] == "1"
        assert sb.run("touch greet/new.py && git status --porcelain", 30).output.strip() == "?? greet/new.py"
        slow = sb.run("sleep 60", 1.0)  # the timeout kill runs as the episode user, not as a root exec
        assert slow.timed_out
        assert sb.run("echo alive", 30).output.strip() == "alive"


def test_sandbox_user_root_is_explicit_with_reduced_capabilities(task: Task) -> None:
    with open_sandbox(task, DOCKER, limits=SandboxLimits(user="root"), run_id="pytest-hardening") as sb:
        st = _status(sb)
        assert st["uid"] == "0"
        assert int(st["CapEff"], 16) == sum(1 << CAP_BITS[c] for c in ROOT_CAPS)  # no NET_RAW, MKNOD, SYS_CHROOT...
        assert st["NoNewPrivs"] == "1"
        assert sb.run("mknod /tmp/dev c 1 3", 30).exit_code != 0
