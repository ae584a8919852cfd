"""Task images: pull a missing one (docker SDK, the user's docker credentials), point names at a mirror, and keep
the images swerl pulled under a disk budget by removing the least recently used ones.

One process-wide `ImageSettings` (set by the CLI from flags and config through `configure`) applies to every
docker sandbox start, so `collect`, `grade` and `tasks validate` pull the same way. Pulls of one image are
serialised (a second episode on it waits for the first pull); different images pull in parallel.

Eviction only ever removes images swerl itself pulled (it can pull them again), never an image named in
`protect` (the sandbox base image), never one a container uses (running or stopped), never one a sandbox start
has pinned. Sizes are as the engine reports them per image (layers shared between images count for each).
Last-use times persist in a small JSON file (`$SWERL_IMAGE_STATE`, default ~/.cache/swerl/images.json).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from swerl_cli.core.errors import ConfigError, SandboxError

GB = 1e9


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


SETTINGS = ImageSettings()
_lock = threading.Lock()  # guards SETTINGS, _pulling, _pins and the state file
_pulling: dict[str, threading.Lock] = {}
_pins: dict[str, int] = {}


def configure(**fields: Any) -> ImageSettings:
    """Replace the process-wide settings' given fields (None values keep the current ones)."""
    global SETTINGS
    with _lock:
        SETTINGS = replace(SETTINGS, **{k: v for k, v in fields.items() if v is not None})
        return SETTINGS


def check_registry(registry: str) -> str:
    """Validate `HOST[:PORT][/NAMESPACE]` (a mirror); ConfigError otherwise."""
    parts = registry.rstrip("/").split("/")
    bad = not registry or "://" in registry or any(c.isspace() for c in registry) or "" in parts
    if bad or (len(parts) > 1 and ":" in parts[-1]):
        raise ConfigError(
            f"field 'registry': expected HOST[:PORT]/NAMESPACE (e.g. mirror.local:5000/swebench); got {registry!r}"
        )
    return registry


def _split(image: str) -> tuple[str | None, str, str]:
    """(registry host or None, repository path, ':tag' or '@digest'); a bare name gets ':latest'."""
    name, digest = image.split("@", 1) if "@" in image else (image, None)
    first, _, rest = name.partition("/")
    host = first if rest and ("." in first or ":" in first or first == "localhost") else None
    path = rest if host else name
    if digest is not None:
        return host, path, "@" + digest
    last = path.rsplit("/", 1)[-1]
    if ":" in last:
        path, _, tag = path.rpartition(":")
        return host, path, ":" + tag
    return host, path, ":latest"


def normalize(image: str) -> str:
    """`image` with its tag spelled out (`x` -> `x:latest`), as pulls and lookups use it."""
    host, path, suffix = _split(image)
    return f"{host}/{path}{suffix}" if host else f"{path}{suffix}"


def registry_of(image: str) -> str:
    """The registry a pull of `image` talks to: `registry_of("swebench/x:latest") == "docker.io"`."""
    return _split(image)[0] or "docker.io"


def mirror(image: str, registry: str | None) -> str:
    """`image` as found on the mirror `HOST[:PORT]/NAMESPACE`: the host and namespace are replaced, the last path
    component and the tag kept. A mirror without a namespace keeps the image's own path.

    >>> mirror("swebench/sweb.eval.x86_64.django_1776_django-16255:latest", "mirror.local:5000/team")
    'mirror.local:5000/team/sweb.eval.x86_64.django_1776_django-16255:latest'
    >>> mirror("docker.io/swebench/x", "127.0.0.1:5000")
    '127.0.0.1:5000/swebench/x:latest'
    """
    if not registry:
        return image
    _, path, suffix = _split(image)
    registry = registry.rstrip("/")
    if "/" in registry:
        return f"{registry}/{path.rsplit('/', 1)[-1]}{suffix}"
    return f"{registry}/{path}{suffix}"


# -- state: last use of each image, and which ones swerl pulled ---------------------------------------------------
def _state_path() -> Path:
    env = os.environ.get("SWERL_IMAGE_STATE")
    return Path(env) if env else Path.home() / ".cache" / "swerl" / "images.json"


def _load() -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(_state_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _touch(image: str, *, pulled: bool = False) -> None:
    _touch_many({image: pulled})


def _touch_many(images: dict[str, bool]) -> None:
    """Record a use of each image (and, where its value is true, that swerl pulled it): one read and one write."""
    if not images:
        return
    with _lock:
        state = _load()
        now = time.time()
        for image, pulled in images.items():
            entry = state.setdefault(image, {"pulled": False})
            entry["last_used"] = now
            entry["pulled"] = bool(entry.get("pulled")) or pulled
        path = _state_path()
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(json.dumps(state, sort_keys=True))
            tmp.replace(path)


@contextlib.contextmanager
def pinned(image: str) -> Iterator[None]:
    """Keep `image` from eviction while a sandbox on it is being started."""
    with _lock:
        _pins[image] = _pins.get(image, 0) + 1
    try:
        yield
    finally:
        with _lock:
            _pins[image] -= 1
            if not _pins[image]:
                del _pins[image]


# -- pull -----------------------------------------------------------------------------------------------------
def _key(image: str) -> str:
    """How the engine lists `image`: Docker Hub names without `docker.io/` and `library/`, tag spelled out."""
    host, path, suffix = _split(image)
    if host in (None, "docker.io", "index.docker.io", "registry-1.docker.io"):
        return path.removeprefix("library/") + suffix
    return f"{host}/{path}{suffix}"


def local_images(client: Any) -> dict[str, tuple[int, str]]:
    """Every tag and digest reference the engine holds -> (size in bytes, image id), from one list call."""
    out: dict[str, tuple[int, str]] = {}
    for img in client.api.images():
        for ref in [*(img.get("RepoTags") or []), *(img.get("RepoDigests") or [])]:
            if not ref.startswith("<none>"):
                out[_key(ref)] = (int(img.get("Size") or 0), img.get("Id", ""))
    return out


def present(client: Any, image: str) -> bool:
    """Whether the engine has `image`."""
    import docker

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True


def ensure_image(image: str, settings: ImageSettings | None = None, client: Any = None) -> str:
    """Make `image` available locally: 'present' or 'pulled'. SandboxError (naming image and registry) when it
    cannot be had, or, with pulls off, naming the command that fetches it."""
    import docker
    import requests

    from swerl_cli.sandbox.docker import docker_client
    from swerl_cli.tasks.fields import image_problem

    s = settings or SETTINGS
    problem = image_problem(image)
    if problem:
        raise SandboxError(f"not a valid image reference {image[:80]!r}: {problem}")
    image = normalize(image)
    try:
        fetched = _fetch(client or docker_client(), image, s, check_present=True)
    except (docker.errors.DockerException, requests.RequestException) as e:  # the engine refused the reference
        raise SandboxError(f"image {image}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    if fetched is None:
        _touch(image)
        return "present"
    _touch(image, pulled=True)
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
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise SandboxError(f"could not pull {image} from {registry}: {msg}") from None
    if log:
        log(f"pulled {image} ({size / 1e6:.0f} MB) in {time.monotonic() - t0:.1f}s")
    return size


# -- budget ---------------------------------------------------------------------------------------------------
def evict(settings: ImageSettings, keep: str | None = None, client: Any = None) -> list[tuple[str, int]]:
    """Remove least-recently-used pulled images until their total size fits the budget; returns (image, bytes)
    removed. Images in use, pinned, protected or named `keep` stay."""
    from swerl_cli.sandbox.docker import docker_client

    if settings.budget_gb is None:
        return []
    client = client or docker_client()
    with _lock:
        state = _load()
        pins = set(_pins)
    have = local_images(client)
    sized: list[tuple[float, str, int, str]] = []
    for image, entry in state.items():
        if entry.get("pulled") and _key(image) in have:  # not: gone already (removed by hand)
            size, image_id = have[_key(image)]
            sized.append((float(entry.get("last_used") or 0), image, size, image_id))
    total = sum(size for _, _, size, _ in sized)
    budget = settings.budget_gb * GB
    if total <= budget:
        return []
    used = {c.get("ImageID") for c in client.api.containers(all=True)}
    protected = {normalize(p) for p in settings.protect}
    freed: list[tuple[str, int]] = []
    for _, image, size, image_id in sorted(sized):
        if total <= budget:
            break
        if image == keep or image in pins or image in protected or image_id in used:
            continue
        try:
            client.images.remove(image)
        except Exception:  # a container appeared on it meanwhile, or another tag holds it: keep it
            continue
        total -= size
        freed.append((image, size))
    if freed and settings.log:
        names = ", ".join(image for image, _ in freed)
        settings.log(
            f"image budget {settings.budget_gb:g} GB: removed {len(freed)} least recently used "
            f"({names}), freed {sum(b for _, b in freed) / GB:.2f} GB; pulled images now {total / GB:.2f} GB"
        )
    return freed


# -- prefetching many images ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PullConfig:
    """`swerl tasks pull`: parallel pulls, a mirror and a disk budget (flags are the kebab-case twins)."""

    workers: int = 4
    registry: str | None = None
    image_budget_gb: float | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.workers <= 64:
            raise ConfigError(f"field 'workers': must be between 1 and 64; got {self.workers}")
        ImageSettings(registry=self.registry, budget_gb=self.image_budget_gb)


def task_images(images: list[str], registry: str | None) -> list[str]:
    """The distinct image references to fetch for these task images (mirrored, tags spelled out), in order."""
    return list(dict.fromkeys(normalize(mirror(i, registry)) for i in images))


def pull_many(
    images: list[str],
    workers: int,
    on_done: Callable[[dict[str, Any]], None],
    settings: ImageSettings | None = None,
    client: Any = None,
) -> None:
    """Ensure every image (already mirrored) is present, `workers` pulls at a time; `on_done(record)` per image
    with image, registry, status (present, pulled, error), bytes, seconds and error. Failures never stop the run.

    One image list answers which are present, so the pulls start at once and each costs the engine the pull and
    one inspect (its size); the state file is written once at the end (and before each budget check)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from swerl_cli.sandbox.docker import docker_client

    if not images:  # nothing to fetch: no engine needed
        return
    s = settings or SETTINGS
    client = client or docker_client()
    have = local_images(client)
    uses: dict[str, bool] = {}  # image -> pulled by swerl, not yet in the state file

    def flush() -> None:
        with _lock:
            batch = dict(uses)
            uses.clear()
        _touch_many(batch)

    def record(image: str, t0: float, status: str, size: int | None, error: str | None = None) -> dict[str, Any]:
        return {
            "image": image,
            "registry": registry_of(image),
            "status": status,
            "bytes": size,
            "seconds": round(time.monotonic() - t0, 3),
            "error": error,
        }

    def one(image: str) -> dict[str, Any]:
        t0 = time.monotonic()
        try:
            size = _fetch(client, image, s, check_present=False)  # the image list said it is missing
        except SandboxError as e:
            return record(image, t0, "error", None, str(e))
        with _lock:
            uses[image] = True
        if s.budget_gb is not None:  # eviction finds the images swerl pulled in the state file
            flush()
            evict(s, keep=image, client=client)
        return record(image, t0, "pulled", size)

    t0 = time.monotonic()
    missing = []
    for image in images:
        if _key(image) in have:
            uses[image] = False
            on_done(record(image, t0, "present", have[_key(image)][0]))
        else:
            missing.append(image)
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="swerl-pull") as pool:
            for fut in as_completed([pool.submit(one, image) for image in missing]):
                on_done(fut.result())
    finally:
        flush()


def pull_here(
    images: list[str], workers: int, settings: ImageSettings | None = None, backend: str = "docker"
) -> list[dict[str, Any]]:
    """`pull_many` on this machine's engine of `backend`, the records collected (what each node of a cluster runs)."""
    from swerl_cli.sandbox import engine_client

    out: list[dict[str, Any]] = []
    pull_many(images, workers, out.append, settings, engine_client(backend))
    return out
