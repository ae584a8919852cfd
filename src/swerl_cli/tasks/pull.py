"""`swerl tasks pull`'s work below the CLI: which images a task file needs (rows naming no valid image refused per
row), the pulls on this machine or on every node of a cluster, and the tally of their records."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from swerl_cli.streams.records import Located, Task, check_schema
from swerl_cli.streams.task_fields import task_row_error


def images_of(rows: Iterable[Located]) -> tuple[list[str], list[dict[str, Any]]]:
    """(the image of every task, an error record per row whose image is not a valid reference: it is never sent
    to the engine); other bad fields do not matter to a pull."""
    refs: list[str] = []
    refused: list[dict[str, Any]] = []
    for loc in rows:
        check_schema(loc, "swerl.task")
        task = Task.from_json(loc)
        bad = task_row_error(loc, task)
        if bad is not None and bad.field == "image":
            refused.append({"image": task.image, "registry": None, "status": "error", "bytes": None, "seconds": 0.0,
                            "error": str(bad), "invalid_field": "image"})  # fmt: skip
        else:
            refs.append(task.image)
    return refs, refused


@dataclass(slots=True)
class PullTally:
    """Counts of the pull records by status, and the bytes pulled."""

    counts: dict[str, int] = field(default_factory=lambda: {"present": 0, "pulled": 0, "error": 0})
    total_bytes: int = 0

    def add(self, rec: dict[str, Any]) -> None:
        """Count one pull record."""
        self.counts[rec["status"]] += 1
        if rec["status"] == "pulled":
            self.total_bytes += rec["bytes"] or 0

    def progress(self) -> str:
        """The progress line: `pulled 3 (120 MB of images), errors 0`."""
        return (
            f"pulled {self.counts['pulled']} ({self.total_bytes / 1e6:.0f} MB of images), errors {self.counts['error']}"
        )

    def summary(self, images: int, seconds: float, cluster: bool) -> str:
        """The closing line (after `swerl tasks pull: `)."""
        where = " (summed over the nodes)" if cluster else ""
        return (
            f"{images} images{where}: {self.counts['pulled']} pulled "
            f"({self.total_bytes / 1e6:.0f} MB of images, shared layers counted per image), "
            f"{self.counts['present']} present, {self.counts['error']} failed in {seconds:.1f}s"
        )


def pull_images(todo: list[str], workers: int, backend: Any, executor: Any, done: Callable[[dict], None]) -> None:
    """Pull `todo` with `workers` pulls at a time under `backend`'s image settings, `done(record)` per image: into
    this machine's engine of `backend` (an image-using SandboxBackend), or (an `executor` of a cluster) into every
    node's own, each record naming its node (a node gets the backend without its log)."""
    from swerl_cli.sandbox import engine_client, images

    if executor is None:
        images.pull_many(todo, workers, done, backend.image_settings(), engine_client(backend) if todo else None)
        return
    for node in executor.on_every_node(images.pull_here, todo, workers, backend, timeout_s=None):
        for rec in node.value:
            done({**rec, "node": node.node})
    executor.close()
