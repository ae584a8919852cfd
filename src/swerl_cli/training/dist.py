"""Process-group plumbing: one process by default, torchrun or the deepspeed launcher for many.

`ensure_dist_env()` fills RANK/LOCAL_RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT when no launcher set them, so a plain
`swerl rft` runs as a world of one (DeepSpeed would otherwise try mpi4py discovery). `init()` starts the process
group (gloo on CPU, nccl on CUDA) and `shutdown()` destroys it (an exit without it sometimes aborts a rank).
"""

from __future__ import annotations

import os
import socket


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ensure_dist_env() -> None:
    """Set a single-process world in the environment unless a launcher already did."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        os.environ.setdefault("LOCAL_RANK", os.environ["RANK"])
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        return
    os.environ.update({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"})
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))


def rank() -> int:
    """Global rank (0 when not distributed)."""
    return int(os.environ.get("RANK", "0"))


def local_rank() -> int:
    """Rank on this node (0 when not distributed)."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def world_size() -> int:
    """Number of processes (1 when not distributed)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main() -> bool:
    """True on the process that writes files and stdout."""
    return rank() == 0


def init() -> str:
    """Start the process group through DeepSpeed; returns the device string this rank uses."""
    import deepspeed
    import torch

    ensure_dist_env()
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank())
        device, backend = f"cuda:{local_rank()}", "nccl"
    else:
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
        device, backend = "cpu", "gloo"
    if not torch.distributed.is_initialized():
        deepspeed.init_distributed(dist_backend=backend, auto_mpi_discovery=False)
    return device


def barrier() -> None:
    """Wait for every rank (no-op without a process group)."""
    import torch

    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()


def all_reduce_sum(values: list[float], device: str = "cpu") -> list[float]:
    """Sum a small list of floats over ranks (identity in a world of one)."""
    import torch

    if not (torch.distributed.is_available() and torch.distributed.is_initialized()) or world_size() == 1:
        return list(values)
    t = torch.tensor(values, dtype=torch.float64, device=device)
    torch.distributed.all_reduce(t)
    return t.tolist()


def shutdown() -> None:
    """Destroy the process group if one is up (avoids 'terminate called without an active exception')."""
    import torch

    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
