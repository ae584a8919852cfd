"""Task images through podman: `tasks pull --sandbox podman` and a collect pulling through the mirror, from the
real registry on 127.0.0.1 (podman treats it as Docker does: plain HTTP on the loopback address)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import run_swerl
from tests.sandbox.images.conftest import Registry

pytestmark = [pytest.mark.docker, pytest.mark.podman]


def _podman_has(ref: str) -> bool:
    return subprocess.run(["podman", "image", "exists", ref], capture_output=True).returncode == 0


def test_tasks_pull_and_collect_pull_into_podman_through_the_mirror(registry: Registry, toy: dict, tmp_path) -> None:
    mirrored = registry.push(toy["image"], "podman-toy:1")  # pushed with docker, pulled by podman
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({**toy, "image": "swerl-test/podman-toy:1"}) + "\n")
    env = {"SWERL_IMAGE_STATE": str(tmp_path / "images.json")}
    try:
        res = run_swerl("tasks", "pull", str(tasks), "--sandbox", "podman", "--registry", registry.mirror, env=env)
        assert res.returncode == 0, res.stderr.decode()
        [rec] = [json.loads(line) for line in res.stdout.splitlines()]
        assert (rec["image"], rec["status"]) == (mirrored, "pulled")
        assert rec["bytes"] > 0
        assert _podman_has(mirrored)
        subprocess.run(["podman", "rmi", mirrored], capture_output=True, check=True)
        args = ("collect", str(tasks), "--policy", "gold", "--sandbox", "podman", "--registry", registry.mirror)
        col = run_swerl(*args, "--run", "podman-pull", env=env)
        assert col.returncode == 0, col.stderr.decode()
        assert f"pulling {mirrored} from {registry.host}" in col.stderr.decode()
        assert [json.loads(line)["exit_status"] for line in col.stdout.splitlines()] == ["submitted"]
    finally:
        subprocess.run(["podman", "rmi", "-f", mirrored], capture_output=True)


def test_budget_evicts_podmans_least_recently_used_pulled_image(registry: Registry, toy: dict, tmp_path, monkeypatch):
    from swerl_cli.sandbox import create, engine_client, images

    monkeypatch.setenv("SWERL_IMAGE_STATE", str(tmp_path / "images.json"))
    refs = [registry.push(toy["image"], "podman-evict-a:1"), registry.push("swerl-base", "podman-evict-b:1")]
    client, logs = engine_client(create("podman")), []
    try:
        assert images.ensure_image(refs[0], images.ImageSettings(log=logs.append), client=client) == "pulled"
        one = client.api.inspect_image(refs[0])["Size"]
        budget = images.ImageSettings(budget_gb=1.5 * one / 1e9, log=logs.append)  # room for one of them
        assert images.ensure_image(refs[1], budget, client=client) == "pulled"
        assert [_podman_has(r) for r in refs] == [False, True]
        assert _podman_has("swerl-base")  # never pulled by swerl: never evicted
        assert any(f"removed 1 least recently used ({refs[0]})" in m for m in logs), logs
    finally:
        subprocess.run(["podman", "rmi", "-f", *refs], capture_output=True)
