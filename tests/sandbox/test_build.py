"""`swerl tasks build` images: no inherited sandbox labels, cache key on the base image's id, setup of any size,
the repository from a local directory or a bundle with no network."""

from __future__ import annotations

import secrets
import subprocess

import pytest

from swerl_cli.core.errors import SandboxError
from swerl_cli.sandbox import open_sandbox
from swerl_cli.sandbox.build import build_image, image_status
from swerl_cli.streams.records import Located, Task
from tests.sandbox.engines import DOCKER
from tests.sandbox.toy import ENV, make_repo, toy_task

pytestmark = pytest.mark.docker


def _name(tag: str) -> str:
    return f"swerl-test-build-{tag}:{secrets.token_hex(4)}"


def test_built_image_has_only_its_recipe_label_and_a_large_setup_works(tmp_path, made_images) -> None:
    big = "x" * 300_000  # one argument past Linux's 128 KiB MAX_ARG_STRLEN
    rec = toy_task(tmp_path, _name("labels"), dirty=False)
    rec["setup"] = [*rec["setup"], f"echo {big} | wc -c > /big-setup-ran"]
    made_images.append(rec["image"])
    task = Task.from_json(Located("t", 1, rec))
    assert build_image(task, DOCKER) == "built"
    labels = subprocess.run(
        ["docker", "image", "inspect", "-f", "{{json .Config.Labels}}", rec["image"]], capture_output=True, text=True
    ).stdout
    assert "swerl.setup" in labels
    for key in ("swerl.managed", "swerl.run", "swerl.pid", "swerl.instance"):
        assert key not in labels
    with open_sandbox(task, DOCKER, run_id="pytest-build-big") as sb:
        assert sb.run("cat /big-setup-ran").output.strip() == "300001"
        assert sb.run("ls /tmp/swerl-setup.sh 2>&1").exit_code != 0
    assert build_image(task, DOCKER) == "cached"


def test_cache_key_follows_the_base_image_id(tmp_path, made_images) -> None:
    base = _name("base")
    made_images.append(base)
    subprocess.run(["docker", "tag", "swerl-base", base], check=True)
    rec = toy_task(tmp_path, _name("keyed"), dirty=False)
    made_images.append(rec["image"])
    task = Task.from_json(Located("t", 1, rec))
    assert build_image(task, DOCKER, base_image=base) == "built"
    assert image_status(task, base, DOCKER) == "ok"
    cid = subprocess.run(["docker", "create", base, "true"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["docker", "commit", "-c", "LABEL rebuilt=1", cid, base], capture_output=True, check=True)
    subprocess.run(["docker", "rm", cid], capture_output=True)
    assert image_status(task, base, DOCKER) == "stale"  # same name, another image
    assert build_image(task, DOCKER, base_image=base) == "built"


@pytest.mark.parametrize("form", ["dir", "bundle"])
def test_repository_from_a_local_directory_or_bundle(tmp_path, made_images, form: str) -> None:
    info = make_repo(tmp_path, dirty=True)  # the fix is a later commit in the source: hygiene must drop it
    repo = tmp_path / "repo"
    source = str(repo)
    if form == "bundle":
        source = str(tmp_path / "repo.bundle")
        subprocess.run(
            ["git", "-C", str(repo), "bundle", "create", source, "--all"], check=True, env=ENV, capture_output=True
        )
    rec = toy_task(tmp_path / "unused", _name(form), dirty=False)
    rec.update(info, setup=[], repo_source=source)
    made_images.append(rec["image"])
    task = Task.from_json(Located("t", 1, rec))
    assert build_image(task, DOCKER, allowed_sources=[tmp_path]) == "built"
    with open_sandbox(task, DOCKER, run_id=f"pytest-build-{form}") as sb:
        assert sb.run("git rev-parse HEAD").output.strip() == info["base_commit"]
        assert sb.run("git log --all --oneline | wc -l").output.strip() == "1"
        assert sb.run("grep -c FIXED-MARKER calc.py").output.strip() == "0"


def test_prune_stale_removes_a_killed_builds_container_and_keeps_a_live_ones() -> None:
    import os
    import sys

    from swerl_cli.sandbox import engine_client
    from swerl_cli.sandbox.engine import prune_builds

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    names = [
        f"swerl-build-{dead.stdout.strip()}-{secrets.token_hex(4)}",
        f"swerl-build-{os.getpid()}-{secrets.token_hex(4)}",
    ]
    for name in names:
        subprocess.run(["docker", "create", "--name", name, "swerl-base", "true"], capture_output=True, check=True)
    try:
        removed = prune_builds(engine_client(DOCKER), stale_only=True)  # what `sandbox prune --stale` adds
        assert names[0] in removed
        assert names[1] not in removed
        left = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True).stdout
        assert names[1] in left.split()
        assert names[0] not in left.split()
    finally:
        subprocess.run(["docker", "rm", "-f", *names], capture_output=True)


def test_repository_from_a_url_is_fetched_inside_the_build_container(tmp_path, made_images) -> None:
    """A repo_source URL (here git:// from a local `git daemon`) is fetched by git in the build container on the
    host network; nothing is read on the host side. Without network the row is refused before a container starts."""
    import socket
    import time

    info = make_repo(tmp_path / "served", dirty=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    daemon = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--export-all", "--listen=127.0.0.1", f"--port={port}",
         f"--base-path={tmp_path / 'served'}", str(tmp_path / "served")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(50):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        rec = toy_task(tmp_path / "unused", _name("url"), dirty=False)
        rec.update(info, setup=[], repo_source=f"git://127.0.0.1:{port}/repo")
        made_images.append(rec["image"])
        task = Task.from_json(Located("t", 1, rec))
        with pytest.raises(SandboxError, match="needs --network host"):
            build_image(task, DOCKER)
        assert build_image(task, DOCKER, network=True) == "built"
    finally:
        daemon.terminate()
        daemon.wait(10)
    with open_sandbox(task, DOCKER, run_id="pytest-build-url") as sb:
        assert sb.run("git rev-parse HEAD").output.strip() == info["base_commit"]
        assert sb.run("git log --all --oneline | wc -l").output.strip() == "1"
