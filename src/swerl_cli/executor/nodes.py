"""Where a job ran and what it asks of a cluster: `Placement` (Ray's request per job), `this_node`, `node_label`.

Both executors use them (`LocalExecutor` in `executor/__init__.py`, `RayExecutor` in `executor/ray.py`), so they
sit below both and neither imports the other.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from swerl_cli.core.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Placement:
    """What each job asks of the cluster (Ray only): CPUs, memory, and retries when its node is lost."""

    cpus: float = 0.5
    memory_gb: float = 2.0
    max_retries: int = 2

    def __post_init__(self) -> None:
        if self.cpus < 0 or self.memory_gb < 0:
            raise ConfigError(f"--episode-cpus and --episode-memory-gb must be >= 0; got {self.cpus}, {self.memory_gb}")
        if self.max_retries < 0:
            raise ConfigError(f"--max-episode-retries must be >= 0; got {self.max_retries}")


def this_node(ray_node_id: str | None = None) -> dict[str, Any]:
    """The node record put on every output record."""
    return {"host": socket.gethostname(), "ray_node_id": ray_node_id}


def node_label(node: dict[str, Any] | None) -> str:
    """A short name for progress lines: the Ray node id's first 8 hex digits, else the host name."""
    if not node:
        return "?"
    return (node.get("ray_node_id") or "")[:8] or str(node.get("host"))
