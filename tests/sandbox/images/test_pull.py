"""Task images from a real registry on 127.0.0.1: `tasks pull`, pulls inside collect and grade through a mirror,
--no-pull, failed pulls as error records, and the LRU disk budget while a sandbox runs."""

from __future__ import annotations

import subprocess

import orjson
import pytest

from swerl_cli.streams.records import Located, Task
from tests.conftest import run_swerl
from tests.sandbox.engines import DOCKER
from tests.sandbox.images.conftest import Registry, start_registry

pytestmark = pytest.mark.docker


def _records(out: bytes) -> list[dict]:
    return [orjson.loads(line) for line in out.splitlines() if line.strip()]


def _write(path, records) -> str:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return str(path)


def _present(ref: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", ref], capture_output=True).returncode == 0


def _rmi(ref: str) -> None:
    subprocess.run(["docker", "rmi", ref], capture_output=True)


@pytest.fixture(scope="module")
def mirrored(registry: Registry, toy: dict) -> str:
    """The toy task's image pushed to the test registry; returns the mirrored reference."""
    return registry.push(toy["image"])


@pytest.fixture
def env(tmp_path) -> dict:
    return {"SWERL_IMAGE_STATE": str(tmp_path / "images.json")}


def test_tasks_pull_then_collect_and_grade_pull_through_the_mirror(registry, mirrored, toy, tmp_path, env) -> None:
    tasks = _write(tmp_path / "tasks.jsonl", [toy, {**toy, "instance_id": "toy__calc-2"}])
    _rmi(mirrored)
    res = run_swerl("tasks", "pull", tasks, "--registry", registry.mirror, "--workers", "2", env=env)
    assert res.returncode == 0, res.stderr.decode()
    [rec] = _records(res.stdout)  # one image for both tasks
    assert (rec["image"], rec["registry"], rec["status"]) == (mirrored, registry.host, "pulled")
    assert rec["bytes"] > 0
    assert _present(mirrored)
    again = run_swerl("tasks", "pull", tasks, "--registry", registry.mirror, env=env)
    assert _records(again.stdout)[0]["status"] == "present"

    _rmi(mirrored)
    col = run_swerl("collect", tasks, "--policy", "gold", "--registry", registry.mirror, "--run", "reg", env=env)
    assert col.returncode == 0, col.stderr.decode()
    assert f"pulling {mirrored} from {registry.host}" in col.stderr.decode()
    trajs = _records(col.stdout)
    assert [t["exit_status"] for t in trajs] == ["submitted", "submitted"]
    assert {t["task"]["image"] for t in trajs} == {toy["image"]}  # the task itself is unchanged
    _rmi(mirrored)
    gr = run_swerl("grade", "-", "--registry", registry.mirror, "--workers", "2", input=col.stdout, env=env)
    assert gr.returncode == 0, gr.stderr.decode()
    assert [g["grade"]["status"] for g in _records(gr.stdout)] == ["resolved", "resolved"]


def test_no_pull_and_failed_pulls_are_error_records_and_the_run_goes_on(registry, mirrored, toy, tmp_path, env):
    run_swerl("tasks", "pull", _write(tmp_path / "t.jsonl", [toy]), "--registry", registry.mirror, env=env)
    missing = {**toy, "instance_id": "toy__missing-1", "image": "swerl-test-no-such-image:1"}
    trajs = [
        {"schema": "swerl.trajectory/1", "id": f"{t['instance_id']}/g", "task": t, "patch": toy["patch"]}
        for t in (toy, missing)
    ]
    inp = _write(tmp_path / "in.jsonl", trajs)
    res = run_swerl("grade", inp, "--registry", registry.mirror, "--workers", "2", env=env)
    assert res.returncode == 0, res.stderr.decode()
    grades = {r["id"]: r["grade"] for r in _records(res.stdout)}
    assert grades["toy__calc-1/g"]["status"] == "resolved"
    err = grades["toy__missing-1/g"]
    assert (err["status"], err["reward"]) == ("error", None)
    assert f"{registry.mirror}/swerl-test-no-such-image:1" in err["error"]
    assert registry.host in err["error"]

    no_pull = run_swerl("grade", inp, "--registry", registry.mirror, "--no-pull", env=env)
    err = {r["id"]: r["grade"] for r in _records(no_pull.stdout)}["toy__missing-1/g"]
    assert "swerl tasks pull" in err["error"]
    assert err["status"] == "error"

    down = start_registry(tmp_path / "down")
    down.stop()  # a registry that was there and is gone
    res = run_swerl("tasks", "pull", inp.replace("in.jsonl", "t.jsonl"), "--registry", f"{down.host}/x", env=env)
    assert res.returncode == 1
    [rec] = _records(res.stdout)
    assert rec["status"] == "error"
    assert f"{down.host}/x/" in rec["error"]
    assert f"from {down.host}" in rec["error"]
    assert "Traceback" not in res.stderr.decode()


def test_budget_evicts_least_recently_used_pulled_images_but_not_one_in_use(registry, toy, tmp_path, monkeypatch):
    from swerl_cli.sandbox import images, open_sandbox

    monkeypatch.setenv("SWERL_IMAGE_STATE", str(tmp_path / "images.json"))
    refs = []
    for k in range(3):  # three images with a small layer of their own on the toy image
        name = f"{registry.mirror}/evict-{k}:1"
        cid = subprocess.run(
            ["docker", "create", toy["image"], "bash", "-c", f"head -c 100000 /dev/urandom > /tmp/blob{k}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        try:
            subprocess.run(["docker", "start", "-a", cid], check=True, capture_output=True)
            subprocess.run(["docker", "commit", cid, name], check=True, capture_output=True)
        finally:
            subprocess.run(["docker", "rm", "-f", cid], capture_output=True)
        subprocess.run(["docker", "push", "-q", name], check=True, capture_output=True)
        subprocess.run(["docker", "rmi", name], check=True, capture_output=True)
        registry.local_tags.append(name)
        refs.append(name)
    logs: list[str] = []
    for ref in refs[:2]:
        assert images.ensure_image(ref, images.ImageSettings(log=logs.append)) == "pulled"
    one = int(
        subprocess.run(
            ["docker", "image", "inspect", "-f", "{{.Size}}", refs[0]], capture_output=True, text=True
        ).stdout
    )
    budget = images.ImageSettings(budget_gb=2.5 * one / 1e9, log=logs.append)  # room for two, not three
    task = Task.from_json(Located("t", 1, {**toy, "image": refs[0]}))
    with open_sandbox(task, DOCKER, run_id="pytest-evict", hygiene=False) as sb:
        state = tmp_path / "images.json"  # make refs[0] the least recently used: only its use protects it
        data = orjson.loads(state.read_bytes())
        data[refs[0]]["last_used"] = 1.0
        state.write_bytes(orjson.dumps(data))
        assert images.ensure_image(refs[2], budget) == "pulled"
        assert sb.run("ls /tmp/blob0").exit_code == 0
    assert [_present(r) for r in refs] == [True, False, True]
    assert _present("swerl-base")
    assert any(f"removed 1 least recently used ({refs[1]}), freed" in m for m in logs), logs


def test_pulls_use_the_users_docker_credentials_and_bad_ones_are_error_records(toy, tmp_path, env) -> None:
    import base64
    import json

    crypt = pytest.importorskip("crypt")  # bcrypt through libxcrypt, for the registry's htpasswd file
    (tmp_path / "htpasswd").write_text(f"u:{crypt.crypt('pw', crypt.mksalt(crypt.METHOD_BLOWFISH))}\n")
    reg = start_registry(tmp_path / "auth-data", htpasswd=tmp_path / "htpasswd")
    try:
        configs = {}
        for name, secret in (("good", "u:pw"), ("bad", "u:wrong")):
            d = tmp_path / name
            d.mkdir()
            auth = {"auths": {reg.host: {"auth": base64.b64encode(secret.encode()).decode()}}}
            (d / "config.json").write_text(json.dumps(auth))
            configs[name] = str(d)
        tiny = f"{reg.mirror}/swerl-tiny:1"  # a one-file image: the test is about credentials, not layers
        (tmp_path / "f").write_text("x")
        subprocess.run(["tar", "-C", str(tmp_path), "-cf", str(tmp_path / "f.tar"), "f"], check=True)
        subprocess.run(["docker", "import", str(tmp_path / "f.tar"), tiny], check=True, capture_output=True)
        subprocess.run(["docker", "--config", configs["good"], "push", "-q", tiny], check=True, capture_output=True)
        _rmi(tiny)
        reg.local_tags.append(tiny)
        tasks = _write(tmp_path / "t.jsonl", [{**toy, "image": "swerl-tiny:1"}])
        bad = run_swerl("tasks", "pull", tasks, "--registry", reg.mirror, env={**env, "DOCKER_CONFIG": configs["bad"]})
        assert bad.returncode == 1
        [rec] = _records(bad.stdout)
        assert rec["status"] == "error"
        assert f"could not pull {tiny} from {reg.host}" in rec["error"]
        assert "auth" in rec["error"].lower(), rec["error"]  # unauthorized: the credentials were read and refused
        good = run_swerl(
            "tasks", "pull", tasks, "--registry", reg.mirror, env={**env, "DOCKER_CONFIG": configs["good"]}
        )
        assert good.returncode == 0, good.stderr.decode()
        assert _records(good.stdout)[0]["status"] == "pulled"
    finally:
        reg.stop()
        subprocess.run(["docker", "rmi", "-f", *reg.local_tags], capture_output=True)
