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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from swerl_cli.core.errors import SandboxError
from swerl_cli.sandbox import lifecycle
from swerl_cli.sandbox.base import SandboxBackend
from swerl_cli.sandbox.gitops import hygiene_command
from swerl_cli.streams.records import Task
from swerl_cli.streams.task_fields import is_repository_url, repo_source_problem, task_problem

SETUP_LABEL = "swerl.setup"
SCRIPT = "/tmp/swerl-setup.sh"
BUNDLE = "/tmp/swerl-source.bundle"
FETCH_REFS = "'+refs/heads/*:refs/remotes/source/*' '+refs/tags/*:refs/tags/*'"


def setup_hash(task: Task, base_image: str, base_id: str = "", source_digest: str = "") -> str:
    """Identity of an image's recipe: base image name and id, workdir, base_commit, repo source, setup commands."""
    h = hashlib.sha256()
    for part in (base_image, base_id, task.workdir, task.base_commit, source_digest, EPISODE_USER, *task.setup):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


def check_base(base_image: str, backend: SandboxBackend) -> None:
    """SandboxError unless the backend's engine answers and holds `base_image` (checked once before a batch);
    ConfigError for a backend without images."""
    from swerl_cli.sandbox import engine_client

    _base_id(engine_client(backend), base_image)


def _base_id(client: Any, base_image: str) -> str:
    try:
        return client.images.get(base_image).id
    except Exception as e:  # ImageNotFound or an engine error
        raise SandboxError(f"base image {base_image!r} is not available ({str(e).splitlines()[0]})") from None


def check_source(task: Task, allowed: Iterable[str | Path]) -> str | None:
    """The task's `repo_source` once checked: None without one, a repository URL as given (fetched inside the build
    container), or the resolved path (symlinks followed) of one under an `allowed` directory. SandboxError else."""
    if "repo_source" not in task.extra:
        return None
    src = task.extra["repo_source"]
    problem = repo_source_problem(src, allowed)
    if problem:
        raise SandboxError(f"{task.instance_id}: field 'repo_source': {problem}")
    return src if is_repository_url(src) else str(Path(src).expanduser().resolve(strict=True))


def _bundle(task: Task, src: str | None, tmp: str) -> Path | None:
    """A checked local `repo_source` as a bundle file (a directory is bundled here, every ref); None without one
    and for a URL."""
    if src is None or is_repository_url(src):
        return None
    path = Path(src)
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


def image_status(task: Task, base_image: str, backend: SandboxBackend, source_digest: str = "") -> str:
    """'ok' (cached image matches), 'stale' (exists, other recipe) or 'missing', in `backend`'s engine."""
    import docker

    from swerl_cli.sandbox import engine_client

    client = engine_client(backend)
    try:
        img = client.images.get(task.image)
    except docker.errors.ImageNotFound:
        return "missing"
    except docker.errors.APIError as e:  # the engine refused the name
        raise SandboxError(f"{task.instance_id}: image {task.image!r}: {str(e).splitlines()[0]}") from None
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


def _script(task: Task, bundle: Path | None, url: str | None, hygiene: bool) -> str:
    """The build script: one command a line under `set -e`, so a failed fetch or checkout stops the build."""
    wd, base = shlex.quote(task.workdir), shlex.quote(task.base_commit)
    lines = ["set -euo pipefail"]
    if bundle is not None or url is not None:
        # Values reach git as data: `--` ends the options, a base_commit starting with '-' was refused before.
        source, refs = (BUNDLE, "'+refs/*:refs/*'") if url is None else (shlex.quote(url), FETCH_REFS)
        only = "" if url is None else "GIT_ALLOW_PROTOCOL=https:http:git:ssh "  # no file:// or ext:: from a URL
        lines += [
            f"mkdir -p {wd}",
            f"( cd {wd}",
            "  git init -q",
            f"  {only}git fetch -q --update-head-ok -- {source} {refs}",
            f"  git checkout -q -f {base} )",
            f"rm -f {BUNDLE}",
        ]
    lines += task.setup
    if hygiene:
        lines += [f"cd {wd}", f"{hygiene_command(task.base_commit)} >/dev/null"]
        # base_commit may be a name (SWE-smith-style tasks say "HEAD"): compare the commits it names
        lines += [f'test "$(git -C {wd} rev-parse HEAD)" = "$(git -C {wd} rev-parse --verify {base}^{{commit}})"']
    lines += [EPISODE_USER_SETUP.format(wd=wd), f"rm -f {SCRIPT}", ""]
    return "\n".join(lines)


def build_image(
    task: Task,
    backend: SandboxBackend,
    *,
    base_image: str = "swerl-base",
    network: bool = False,
    force: bool = False,
    log: Callable[[str], None] | None = None,
    hygiene: bool = True,
    allowed_sources: Iterable[str | Path] = (),
) -> str:
    """Build `task.image` from `base_image` + `task.setup` in `backend`'s engine (docker, podman); returns 'cached'
    or 'built'. Raises SandboxError (ConfigError for a backend without images).

    A `repo_source` path must lie under one of `allowed_sources` (the directories the user named); a URL is
    fetched inside the build container and needs `network`."""
    if not task.setup and not task.extra.get("repo_source"):
        raise SandboxError(f"{task.instance_id}: no setup commands and no repo_source; cannot build {task.image}")
    bad = task_problem(task, build=True, allowed=allowed_sources)
    if bad is not None:
        raise SandboxError(f"{task.instance_id}: field '{bad[0]}': {bad[1]}")
    src = check_source(task, allowed_sources)
    url = src if src is not None and is_repository_url(src) else None
    if url is not None and not network:
        raise SandboxError(f"{task.instance_id}: field 'repo_source' is a URL; fetching it needs --network host")
    from swerl_cli.sandbox import engine_client

    client = engine_client(backend)
    with tempfile.TemporaryDirectory(prefix="swerl-build-") as tmp:
        bundle = _bundle(task, src, tmp)
        digest = _digest(bundle) if url is None else hashlib.sha256(url.encode()).hexdigest()
        if not force and image_status(task, base_image, backend, digest) == "ok":
            return "cached"
        recipe = setup_hash(task, base_image, _base_id(client, base_image), digest)
        script = _script(task, bundle, url, hygiene)
        host: dict[str, Any] = getattr(backend, "host_options", dict)()  # the engine's container options (podman's)
        _run(client, task, base_image, script, bundle, network, recipe, log, host)
    return "built"


def _copy_in(container: Any, task: Task, script: str, bundle: Path | None) -> None:
    """Put the setup script (executable) and the repository bundle, if any, into the build container."""
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


def _run(
    client: Any,
    task: Task,
    base_image: str,
    script: str,
    bundle: Path | None,
    network: bool,
    recipe: str,
    log: Callable[[str], None] | None,
    options: dict[str, Any],
) -> None:
    container: Any = None
    key = id(object())
    try:
        container = client.containers.create(
            base_image,
            ["bash", SCRIPT],
            network_mode="host" if network else "none",
            name=f"swerl-build-{os.getpid()}-{secrets.token_hex(4)}",
            **options,
        )
        lifecycle.register(key, lambda: container.remove(force=True))
        _copy_in(container, task, script, bundle)
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
