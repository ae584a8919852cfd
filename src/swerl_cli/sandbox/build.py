"""Build a task image: run the task's `setup` commands in a container from a base image, then commit it.

Images are cached by name: an existing image is reused unless its `swerl.setup` label (set by this builder) names
another recipe. The recipe covers the base image's id (not only its name), the workdir, base_commit, the setup
commands and the content of the task's `repo_source`. The setup runs from a script file copied into the container
(any size; no `bash -c` argument), with network off unless asked, and ends with the git-hygiene step (so episode
start takes the fast path) and a check that `base_commit` is what the work tree holds.

`repo_source` (optional task field): a local git repository directory or a `git bundle` file; its history is
copied into `workdir` through the engine's archive API, so a task needs no network to get its repository.

Build containers carry no labels (a committed image inherits its container's labels, and every container started
from it would then look like a swerl sandbox); they are registered for removal on exit and interrupt instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import secrets
import shlex
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swerl_cli.errors import SandboxError
from swerl_cli.records import Task
from swerl_cli.sandbox import lifecycle
from swerl_cli.sandbox.docker import docker_client
from swerl_cli.sandbox.gitops import hygiene_command

SETUP_LABEL = "swerl.setup"
SCRIPT = "/tmp/swerl-setup.sh"
BUNDLE = "/tmp/swerl-source.bundle"


def setup_hash(task: Task, base_image: str, base_id: str = "", source_digest: str = "") -> str:
    """Identity of an image's recipe: base image name and id, workdir, base_commit, repo source, setup commands."""
    h = hashlib.sha256()
    for part in (base_image, base_id, task.workdir, task.base_commit, source_digest, EPISODE_USER, *task.setup):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


def _base_id(client: Any, base_image: str) -> str:
    try:
        return client.images.get(base_image).id
    except Exception as e:  # ImageNotFound or an engine error
        raise SandboxError(f"base image {base_image!r} is not available ({str(e).splitlines()[0]})") from None


def _bundle(task: Task, tmp: str) -> Path | None:
    """The task's `repo_source` as a bundle file (a directory is bundled here, every ref); None without one."""
    src = task.extra.get("repo_source")
    if not src:
        return None
    path = Path(str(src)).expanduser()
    if path.is_file():
        return path
    if not path.is_dir():
        raise SandboxError(f"{task.instance_id}: repo_source {str(path)!r} is neither a directory nor a bundle file")
    out = Path(tmp) / "source.bundle"
    res = subprocess.run(
        ["git", "-C", str(path), "bundle", "create", str(out), "--all"], capture_output=True, text=True
    )
    if res.returncode != 0:
        raise SandboxError(f"{task.instance_id}: git bundle of {str(path)!r} failed: {res.stderr.strip()[-300:]}")
    return out


def _digest(path: Path | None) -> str:
    if path is None:
        return ""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def image_status(task: Task, base_image: str, source_digest: str = "") -> str:
    """'ok' (cached image matches), 'stale' (exists, other recipe) or 'missing'."""
    import docker

    client = docker_client()
    try:
        img = client.images.get(task.image)
    except docker.errors.ImageNotFound:
        return "missing"
    label = (img.labels or {}).get(SETUP_LABEL)
    # An image built by other means (no label) is trusted by name; one of ours must match the recipe.
    if label is None:
        return "ok"
    return "ok" if label == setup_hash(task, base_image, _base_id(client, base_image), source_digest) else "stale"


# The unprivileged episode user of every image swerl builds (docs/sandbox.md): it owns the work tree, nothing else.
EPISODE_USER = "swerl"
EPISODE_USER_SETUP = (
    "if ! id -u swerl >/dev/null 2>&1; then useradd --create-home --uid 1000 --user-group --shell /bin/bash swerl "
    "2>/dev/null || useradd -m -U -s /bin/bash swerl; fi\nchown -R swerl:swerl {wd}"
)


def _script(task: Task, bundle: Path | None, hygiene: bool) -> str:
    wd, base = shlex.quote(task.workdir), shlex.quote(task.base_commit)
    lines = ["set -euo pipefail"]
    if bundle is not None:
        lines += [
            f"mkdir -p {wd} && ( cd {wd} && git init -q && git fetch -q --update-head-ok {BUNDLE} '+refs/*:refs/*'"
            f" && git checkout -q -f {base} ) && rm -f {BUNDLE}"
        ]
    lines += task.setup
    if hygiene:
        lines += [f"cd {wd}", f"{hygiene_command(task.base_commit)} >/dev/null"]
        lines += [f'test "$(git -C {wd} rev-parse HEAD)" = {base}']
    lines += [EPISODE_USER_SETUP.format(wd=wd), f"rm -f {SCRIPT}", ""]
    return "\n".join(lines)


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
    if not task.setup and not task.extra.get("repo_source"):
        raise SandboxError(f"{task.instance_id}: no setup commands and no repo_source; cannot build {task.image}")
    client = docker_client()
    with tempfile.TemporaryDirectory(prefix="swerl-build-") as tmp:
        bundle = _bundle(task, tmp)
        digest = _digest(bundle)
        if not force and image_status(task, base_image, digest) == "ok":
            return "cached"
        recipe = setup_hash(task, base_image, _base_id(client, base_image), digest)
        _run(client, task, base_image, _script(task, bundle, hygiene), bundle, network, recipe, log)
    return "built"


def _run(
    client: Any,
    task: Task,
    base_image: str,
    script: str,
    bundle: Path | None,
    network: bool,
    recipe: str,
    log: Callable[[str], None] | None,
) -> None:
    container: Any = None
    key = id(object())
    try:
        container = client.containers.create(
            base_image,
            ["bash", SCRIPT],
            network_mode="host" if network else "none",
            name=f"swerl-build-{os.getpid()}-{secrets.token_hex(4)}",
        )
        lifecycle.register(key, lambda: container.remove(force=True))
        with tempfile.TemporaryFile() as buf:
            with tarfile.open(fileobj=buf, mode="w") as tar:
                info = tarfile.TarInfo(SCRIPT.lstrip("/"))
                data = script.encode()
                info.size, info.mode = len(data), 0o755
                tar.addfile(info, fileobj=io.BytesIO(data))
                if bundle is not None:
                    tar.add(str(bundle), arcname=BUNDLE.lstrip("/"))
            buf.seek(0)
            if not container.put_archive("/", buf):
                raise SandboxError(f"{task.instance_id}: could not copy the setup script into the build container")
        container.start()
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
                f"USER {EPISODE_USER}",
                'CMD ["/bin/bash"]',
                f"LABEL {SETUP_LABEL}={recipe}",
            ],
        )
    except SandboxError:
        raise
    except Exception as e:  # docker API errors become one line
        raise SandboxError(f"{task.instance_id}: building {task.image} failed: {str(e).splitlines()[0]}") from None
    finally:
        lifecycle.unregister(key)
        if container is not None:
            with contextlib.suppress(Exception):
                container.remove(force=True)
