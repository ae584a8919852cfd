"""`pull_many` (what `swerl tasks pull` runs) without an engine: one image list, N pulls in flight, one state write."""

from __future__ import annotations

import json
import threading
import time

import pytest

from swerl_cli.core.errors import SandboxError
from swerl_cli.sandbox import docker as sandbox_docker
from swerl_cli.sandbox import images

LISTED = [  # what the engine answers to GET /images/json
    {"RepoTags": ["present:1"], "RepoDigests": [], "Size": 7, "Id": "sha256:a"},
    {"RepoTags": ["m.local:5000/ns/here:1"], "RepoDigests": ["m.local:5000/ns/here@sha256:d"], "Size": 9, "Id": "b"},
    {"RepoTags": ["<none>:<none>"], "RepoDigests": ["<none>@<none>"], "Size": 1, "Id": "sha256:c"},
]


class _Api:
    def __init__(self) -> None:
        self.lists = 0

    def images(self) -> list[dict]:
        self.lists += 1
        return LISTED


class _Client:
    def __init__(self) -> None:
        self.api = _Api()


@pytest.fixture
def engine(monkeypatch, tmp_path):
    """A fake engine client and a fake pull that records how many pulls run at once."""
    monkeypatch.setenv("SWERL_IMAGE_STATE", str(tmp_path / "images.json"))
    client = _Client()
    monkeypatch.setattr(sandbox_docker, "docker_client", lambda: client)
    seen = {"now": 0, "peak": 0, "pulled": []}
    lock = threading.Lock()

    def fake_pull(_client, image, log=None) -> int:
        with lock:
            seen["now"] += 1
            seen["peak"] = max(seen["peak"], seen["now"])
        time.sleep(0.05)
        with lock:
            seen["now"] -= 1
            seen["pulled"].append(image)
        if "bad" in image:
            raise SandboxError(f"could not pull {image} from m.local:5000: manifest unknown")
        return 1000

    monkeypatch.setattr(images, "pull", fake_pull)
    writes: list[dict] = []
    real_touch = images.touch_many
    monkeypatch.setattr(images, "touch_many", lambda batch: (writes.append(dict(batch)), real_touch(batch)))
    return client, seen, writes


def test_present_images_come_from_one_list_and_n_pulls_stay_in_flight(engine, tmp_path) -> None:
    client, seen, writes = engine
    missing = [f"m.local:5000/ns/x{k}:1" for k in range(10)]
    todo = ["docker.io/library/present:1", "m.local:5000/ns/here@sha256:d", *missing, "m.local:5000/ns/bad:1"]
    recs: list[dict] = []
    images.pull_many(todo, 4, recs.append, images.ImageSettings())
    assert client.api.lists == 1  # no inspect per image before the pulls
    assert seen["peak"] == 4
    assert sorted(seen["pulled"]) == sorted([*missing, "m.local:5000/ns/bad:1"])  # present ones never pulled
    status = {r["image"]: r["status"] for r in recs}
    assert status == {
        "docker.io/library/present:1": "present",
        "m.local:5000/ns/here@sha256:d": "present",
        **dict.fromkeys(missing, "pulled"),
        "m.local:5000/ns/bad:1": "error",
    }
    by_image = {r["image"]: r for r in recs}
    assert by_image["docker.io/library/present:1"]["bytes"] == 7
    assert by_image["m.local:5000/ns/x3:1"]["bytes"] == 1000
    assert "manifest unknown" in by_image["m.local:5000/ns/bad:1"]["error"]
    assert len(writes) == 1  # the state file: one write for the whole run
    state = json.loads((tmp_path / "images.json").read_text())
    assert {k for k, v in state.items() if v["pulled"]} == set(missing)
    assert not state["docker.io/library/present:1"]["pulled"]
    assert "m.local:5000/ns/bad:1" not in state


@pytest.mark.usefixtures("engine")
def test_with_a_budget_each_pull_is_in_the_state_file_before_eviction_looks(monkeypatch, tmp_path) -> None:
    looked: list[set[str]] = []

    def fake_evict(settings, keep=None, client=None):
        state = json.loads((tmp_path / "images.json").read_text())
        looked.append({k for k, v in state.items() if v["pulled"]})
        assert keep in looked[-1]
        return []

    monkeypatch.setattr(images, "evict", fake_evict)
    todo = [f"m.local:5000/ns/x{k}:1" for k in range(3)]
    images.pull_many(todo, 1, lambda rec: None, images.ImageSettings(budget_gb=1.0))
    assert [len(s) for s in looked] == [1, 2, 3]


def test_an_empty_list_needs_no_engine(monkeypatch) -> None:
    def no_engine():
        raise AssertionError("the engine was asked for nothing to pull")

    monkeypatch.setattr(sandbox_docker, "docker_client", no_engine)
    recs: list[dict] = []
    images.pull_many([], 4, recs.append, images.ImageSettings())
    assert recs == []
