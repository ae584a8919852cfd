"""collect pulls the images of queued episodes while earlier ones run (no engine: fake pulls and sandboxes)."""

from __future__ import annotations

import json
import threading
import time

from swerl_cli.collect import CollectConfig, plan_jobs, run_jobs
from swerl_cli.streams.records import Located
from tests.agent.fakes import MemorySandbox, ScriptedPolicy, command
from tests.conftest import EXAMPLES


def test_images_of_queued_episodes_are_pulled_before_their_episodes_start(monkeypatch):
    from swerl_cli.collect import scheduler
    from swerl_cli.sandbox import images
    from swerl_cli.sandbox.engine import DockerBackend

    events: list[tuple[str, str]] = []
    lock = threading.Lock()

    def fake_pull(self: DockerBackend, image: str) -> str:
        with lock:
            events.append(("pull", image))
        return "pulled"

    def fake_start(job, cfg):  # a slow container start: the pulls of later images overlap it
        with lock:
            events.append(("start", images.normalize(job.task.image)))
        time.sleep(0.3)
        return MemorySandbox()

    monkeypatch.setattr(DockerBackend, "ensure_image", fake_pull)
    monkeypatch.setattr(scheduler, "start_job_sandbox", fake_start)
    rows = [json.loads(line) for line in (EXAMPLES / "tasks.jsonl").read_text().splitlines()[:4]]
    for k, row in enumerate(rows):
        row["image"] = f"img-{k}:1"
    # the mirror is the backend's own option, read from collect's --registry when its config is built
    cfg = CollectConfig(policy="gold", concurrency=1, prefetch=0, run="pull-ahead", registry="mirror.local:5000/ns")
    jobs = plan_jobs([Located("t", i + 1, r) for i, r in enumerate(rows)], cfg, set())
    out: list[dict] = []
    policy = ScriptedPolicy([command("submit", "Done.")] * 4)
    run_jobs(jobs, cfg, out.append, policy=policy)
    assert [r["exit_status"] for r in out] == ["submitted"] * 4
    refs = [f"mirror.local:5000/ns/img-{k}:1" for k in range(4)]
    pulls = [image for kind, image in events if kind == "pull"]
    assert sorted(pulls) == refs  # each image once, through the mirror
    second_start = [i for i, (kind, _) in enumerate(events) if kind == "start"][1]
    assert {image for kind, image in events[:second_start] if kind == "pull"} == set(refs)
