"""Task images: pull a missing one (docker SDK, the user's credentials), point names at a mirror, and keep the
images swerl pulled under a disk budget (image_budget.py); reference parsing and mirror names are image_names.py.

The settings are the image-using backend's own options (engine.py `DockerOptions`: registry, pull, image_budget_gb,
built from a command's flags), handed to every call here as an `ImageSettings`; nothing is process-wide but the
pull locks. Pulls of one image are serialised (a second episode on it waits for the first pull); different images
pull in parallel.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from swerl_cli.core.config import Flag, flag
from swerl_cli.core.errors import ConfigError, SandboxError, first_line
from swerl_cli.sandbox.image_budget import evict, local_images, touch, touch_many
from swerl_cli.sandbox.image_names import check_registry, engine_key, mirror, normalize, registry_of

# The image flags, declared once for the configs that take them (executor.JobSettings, PullConfig).
REGISTRY_FLAG = Flag("Pull every task image from this mirror (same name and tag).", metavar="HOST[:PORT]/NAMESPACE")
IMAGE_BUDGET_FLAG = Flag("Remove least recently used pulled images not in use past this many GB.", metavar="GB")


@dataclass(frozen=True, slots=True)
class ImageSettings:
    """How sandboxes get their images: pull when missing, a mirror, a disk budget, and where progress goes."""

    pull: bool = True
    registry: str | None = None
    budget_gb: float | None = None
    protect: tuple[str, ...] = ("swerl-base",)
    log: Callable[[str], None] | None = None

    def __post_init__(self) -> None:
        if self.budget_gb is not None and self.budget_gb <= 0:
            raise ConfigError(f"field 'image_budget_gb': must be > 0 GB; got {self.budget_gb}")
        if self.registry is not None:
            check_registry(self.registry)


_lock = threading.Lock()  # guards _pulling and a batch's uses
_pulling: dict[str, threading.Lock] = {}


def resolve(image: str, registry: str | None) -> str:
    """The reference a sandbox start pulls for a task's `image`: on the mirror `registry`, if set; tag spelled out."""
    return normalize(mirror(image, registry))


def present(client: Any, image: str) -> bool:
    """Whether the engine has `image`."""
    import docker

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True


def ensure_image(image: str, settings: ImageSettings, client: Any = None) -> str:
    """Make `image` available locally: 'present' or 'pulled'. SandboxError (naming image and registry) when it
    cannot be had, or, with pulls off, naming the command that fetches it."""
    import docker
    import requests

    from swerl_cli.sandbox.docker import docker_client
    from swerl_cli.streams.task_fields import image_problem

    s = settings
    problem = image_problem(image)
    if problem:
        raise SandboxError(f"not a valid image reference {image[:80]!r}: {problem}")
    image = normalize(image)
    try:
        fetched = _fetch(client or docker_client(), image, s, check_present=True)
    except (docker.errors.DockerException, requests.RequestException) as e:  # the engine refused the reference
        raise SandboxError(f"image {image}: {first_line(e)}") from None
    if fetched is None:
        touch(image)
        return "present"
    touch(image, pulled=True)
    if s.budget_gb is not None:
        evict(s, keep=image, client=client)
    return "pulled"


def _fetch(client: Any, image: str, s: ImageSettings, *, check_present: bool) -> int | None:
    """Pull `image` under its own lock (one pull per image at a time) and return its size; None when
    `check_present` finds it there (perhaps just pulled by another thread). SandboxError with pulls off."""
    with _lock:
        gate = _pulling.setdefault(image, threading.Lock())
    with gate:
        if check_present and present(client, image):
            return None
        if not s.pull:
            raise SandboxError(ensure_error(image, s))
        return pull(client, image, s.log)


def ensure_error(image: str, s: ImageSettings) -> str:
    """What a missing image says when pulls are off: the commands that fetch it."""
    return (
        f"image {image} is not present locally and pulls are off (--no-pull); fetch it with "
        f"`swerl tasks pull TASKS`{' --registry ' + s.registry if s.registry else ''} or `docker pull {image}`"
    )


def pull(client: Any, image: str, log: Callable[[str], None] | None = None) -> int:
    """Pull `image` (tag spelled out) with the user's docker credentials; returns its size in bytes."""
    registry = registry_of(image)
    t0 = time.monotonic()
    if log:
        log(f"pulling {image} from {registry}")
    try:
        for event in client.api.pull(image, stream=True, decode=True):
            if isinstance(event, dict) and event.get("error"):
                raise SandboxError(f"could not pull {image} from {registry}: {str(event['error']).strip()}")
        size = int(client.api.inspect_image(image).get("Size") or 0)
    except SandboxError:
        raise
    except Exception as e:  # docker.errors.*, requests connection errors: one line naming image and registry
        msg = first_line(e)
        raise SandboxError(f"could not pull {image} from {registry}: {msg}") from None
    if log:
        log(f"pulled {image} ({size / 1e6:.0f} MB) in {time.monotonic() - t0:.1f}s")
    return size


@dataclass(frozen=True, slots=True)
class PullConfig:
    """`swerl tasks pull`: parallel pulls, a mirror and a disk budget (flags are the kebab-case twins)."""

    workers: int = flag(4, "Pulls at once.", metavar="N")
    registry: str | None = flag(None, REGISTRY_FLAG)
    image_budget_gb: float | None = flag(None, IMAGE_BUDGET_FLAG)

    def __post_init__(self) -> None:
        if not 1 <= self.workers <= 64:
            raise ConfigError(f"field 'workers': must be between 1 and 64; got {self.workers}")
        ImageSettings(registry=self.registry, budget_gb=self.image_budget_gb)


def pull_many(
    images: list[str],
    workers: int,
    on_done: Callable[[dict[str, Any]], None],
    settings: ImageSettings,
    client: Any = None,
) -> None:
    """Ensure every image (already mirrored) is present, `workers` pulls at a time; `on_done(record)` per image
    with image, registry, status (present, pulled, error), bytes, seconds and error. Failures never stop the run.

    One image list answers which are present, so the pulls start at once and each costs the engine the pull and
    one inspect (its size); the state file is written once at the end (and before each budget check)."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    from swerl_cli.sandbox.docker import docker_client

    if not images:  # nothing to fetch: no engine needed
        return
    batch = _PullBatch(client or docker_client(), settings)
    missing = batch.report_present(images, on_done)
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="swerl-pull") as pool:
            pending = {pool.submit(batch.pull, image) for image in missing}
            while pending:  # in steps of 0.5 s: a signal a pull's thread took is handled within that
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in done:
                    on_done(fut.result())
    finally:
        batch.flush()


class _PullBatch:
    """The images of one `pull_many`: what the engine had at the start, and the uses not yet in the state file."""

    def __init__(self, client: Any, settings: ImageSettings):
        self.client, self.settings = client, settings
        self.have = local_images(client)
        self.uses: dict[str, bool] = {}  # image -> pulled by swerl, not yet in the state file

    def flush(self) -> None:
        """Write the uses gathered so far to the state file (one read and one write)."""
        with _lock:
            batch = dict(self.uses)
            self.uses.clear()
        touch_many(batch)

    def report_present(self, images: list[str], on_done: Callable[[dict[str, Any]], None]) -> list[str]:
        """Report each image the engine has as `present`; return the missing ones, in order."""
        t0 = time.monotonic()
        missing = []
        for image in images:
            if engine_key(image) in self.have:
                self.uses[image] = False
                on_done(_record(image, t0, "present", self.have[engine_key(image)][0]))
            else:
                missing.append(image)
        return missing

    def pull(self, image: str) -> dict[str, Any]:
        """Pull one image the engine lacked; its record (an error record when the pull fails)."""
        t0 = time.monotonic()
        try:
            size = _fetch(self.client, image, self.settings, check_present=False)  # the list said it is missing
        except SandboxError as e:
            return _record(image, t0, "error", None, str(e))
        with _lock:
            self.uses[image] = True
        if self.settings.budget_gb is not None:  # eviction finds the images swerl pulled in the state file
            self.flush()
            evict(self.settings, keep=image, client=self.client)
        return _record(image, t0, "pulled", size)


def _record(image: str, t0: float, status: str, size: int | None, error: str | None = None) -> dict[str, Any]:
    return {
        "image": image,
        "registry": registry_of(image),
        "status": status,
        "bytes": size,
        "seconds": round(time.monotonic() - t0, 3),
        "error": error,
    }


def pull_here(images: list[str], workers: int, backend: Any) -> list[dict[str, Any]]:
    """`pull_many` into this machine's engine of `backend` (an image-using SandboxBackend), under its own settings,
    the records collected (what each node of a cluster runs)."""
    out: list[dict[str, Any]] = []
    pull_many(images, workers, out.append, backend.image_settings(), backend.client())
    return out
