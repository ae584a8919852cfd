"""Build a task image: run the task's `setup` commands in a container from a base image, then commit it.

Images are cached by name: an existing image is reused unless its `swerl.setup` label (set by this builder) names
another recipe. The build runs with network off unless asked, ends with the git-hygiene step (so episode start
takes the fast path), and checks that `base_commit` is what the work tree holds.
"""

from __future__ import annotations

import contextlib
import hashlib
import shlex
from collections.abc import Callable
from typing import Any

from swerl_cli.errors import SandboxError
from swerl_cli.records import Task
from swerl_cli.sandbox import lifecycle
from swerl_cli.sandbox.docker import docker_client
from swerl_cli.sandbox.gitops import hygiene_command

SETUP_LABEL = "swerl.setup"


def setup_hash(task: Task, base_image: str) -> str:
    """Identity of an image's recipe: base image name + setup commands + workdir + base_commit."""
    h = hashlib.sha256()
    for part in (base_image, task.workdir, task.base_commit, *task.setup):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


def image_status(task: Task, base_image: str) -> str:
    """'ok' (cached image matches), 'stale' (exists, other recipe) or 'missing'."""
    import docker

    try:
        img = docker_client().images.get(task.image)
    except docker.errors.ImageNotFound:
        return "missing"
    label = (img.labels or {}).get(SETUP_LABEL)
    # An image built by other means (no label) is trusted by name; one of ours must match the recipe.
    return "ok" if label is None or label == setup_hash(task, base_image) else "stale"


def build_image(
    task: Task,
    *,
    base_image: str = "swerl-base",
    network: bool = False,
    force: bool = False,
    log: Callable[[str], None] | None = None,
    hygiene: bool = True,
) -> str:
    """Build `task.image` from `base_image` + `task.setup`; returns 'cached' or 'built'. Raises SandboxError."""
    if not task.setup:
        raise SandboxError(f"{task.instance_id}: no setup commands; cannot build {task.image}")
    if not force and image_status(task, base_image) == "ok":
        return "cached"
    client = docker_client()
    script = "set -euo pipefail\n" + "\n".join(task.setup) + "\n"
    if hygiene:
        script += f"cd {shlex.quote(task.workdir)}\n{hygiene_command(task.base_commit)} >/dev/null\n"
        script += f'test "$(git rev-parse HEAD)" = {shlex.quote(task.base_commit)}\n'
    labels = lifecycle.run_labels("build", task.instance_id)
    container: Any = None
    try:
        container = client.containers.run(
            base_image,
            ["bash", "-c", script],
            detach=True,
            labels=labels,
            network_mode="host" if network else "none",
        )
        for chunk in container.logs(stream=True, follow=True):
            if log is not None:
                for line in chunk.decode("utf-8", "replace").splitlines():
                    log(f"{task.instance_id}: {line}")
        code = container.wait().get("StatusCode", 1)
        if code != 0:
            tail = container.logs(tail=15).decode("utf-8", "replace").strip()
            raise SandboxError(f"{task.instance_id}: setup failed with exit code {code}: {tail[-400:]}")
        repo, _, tag = task.image.rpartition(":") if ":" in task.image.split("/")[-1] else (task.image, "", "latest")
        container.commit(
            repository=repo,
            tag=tag or "latest",
            changes=[
                f"WORKDIR {task.workdir}",
                'CMD ["/bin/bash"]',
                f"LABEL {SETUP_LABEL}={setup_hash(task, base_image)}",
            ],
        )
    except SandboxError:
        raise
    except Exception as e:  # docker API errors become one line
        raise SandboxError(f"{task.instance_id}: building {task.image} failed: {str(e).splitlines()[0]}") from None
    finally:
        if container is not None:
            with contextlib.suppress(Exception):
                container.remove(force=True)
    return "built"
