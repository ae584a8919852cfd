"""The images swerl pulled, kept under a disk budget: last-use times in a small JSON file (`$SWERL_IMAGE_STATE`,
default ~/.cache/swerl/images.json), pins held while a sandbox starts, and least-recently-used eviction.

Eviction only ever removes images swerl itself pulled (it can pull them again), never an image named in
`protect` (the sandbox base image), never one a container uses (running or stopped), never one a sandbox start
has pinned. Sizes are as the engine reports them per image (layers shared between images count for each).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from swerl_cli.sandbox.image_names import engine_key, normalize

GB = 1e9
_lock = threading.Lock()  # guards _pins and the state file
_pins: dict[str, int] = {}


class Budget(Protocol):
    """What eviction reads of the image settings (images.py:ImageSettings)."""

    @property
    def budget_gb(self) -> float | None: ...

    @property
    def protect(self) -> tuple[str, ...]: ...

    @property
    def log(self) -> Callable[[str], None] | None: ...


def _state_path() -> Path:
    env = os.environ.get("SWERL_IMAGE_STATE")
    return Path(env) if env else Path.home() / ".cache" / "swerl" / "images.json"


def load_state() -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(_state_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def touch(image: str, *, pulled: bool = False) -> None:
    """Record a use of `image` (and whether swerl pulled it)."""
    touch_many({image: pulled})


def touch_many(images: dict[str, bool]) -> None:
    """Record a use of each image (and, where its value is true, that swerl pulled it): one read and one write."""
    if not images:
        return
    with _lock:
        state = load_state()
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


def local_images(client: Any) -> dict[str, tuple[int, str]]:
    """Every tag and digest reference the engine holds -> (size in bytes, image id), from one list call."""
    out: dict[str, tuple[int, str]] = {}
    for img in client.api.images():
        for ref in [*(img.get("RepoTags") or []), *(img.get("RepoDigests") or [])]:
            if not ref.startswith("<none>"):
                out[engine_key(ref)] = (int(img.get("Size") or 0), img.get("Id", ""))
    return out


def evict(settings: Budget, keep: str | None = None, client: Any = None) -> list[tuple[str, int]]:
    """Remove least-recently-used pulled images until their total size fits the budget; returns (image, bytes)
    removed. Images in use, pinned, protected or named `keep` stay."""
    from swerl_cli.sandbox.docker import docker_client

    if settings.budget_gb is None:
        return []
    client = client or docker_client()
    with _lock:
        state = load_state()
        pins = set(_pins)
    have = local_images(client)
    sized: list[tuple[float, str, int, str]] = []
    for image, entry in state.items():
        if entry.get("pulled") and engine_key(image) in have:  # not: gone already (removed by hand)
            size, image_id = have[engine_key(image)]
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
