"""Process-group plumbing: one process by default, torchrun or the deepspeed launcher for many.

`ensure_dist_env()` fills RANK/LOCAL_RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT when no launcher set them, so a plain
`swerl rft` runs as a world of one (DeepSpeed would otherwise try mpi4py discovery). `init()` starts the process
group (gloo on CPU, nccl on CUDA) and `shutdown()` destroys it (an exit without it sometimes aborts a rank).
On the CPU it first clears the build lock of DeepSpeed's shm_comm op when its holder is gone (`stale_build_locks()`):
DeepSpeed loads that op through torch's JIT loader in every `init_distributed`, and a lock left by a killed process
would make every later run wait on it forever.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path


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


def _extensions_root() -> Path:
    """Where torch builds JIT C++ extensions (TORCH_EXTENSIONS_DIR, else its per-user cache folder)."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if root:
        return Path(root)
    from torch.utils.cpp_extension import get_default_build_root

    return Path(get_default_build_root())


def _open_paths() -> set[str] | None:
    """Every path some readable process has open (Linux /proc); None where /proc cannot tell."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return None
    held: set[str] = set()
    for pid in os.listdir(proc):
        if not pid.isdigit():
            continue
        try:
            fds = os.listdir(proc / pid / "fd")
        except OSError:  # gone, or another user's process (it cannot hold a lock in this user's cache)
            continue
        for fd in fds:
            try:
                held.add(os.readlink(proc / pid / "fd" / fd))
            except OSError:
                continue
    return held


def stale_build_locks(root: Path | None = None, names: tuple[str, ...] = ("*",), settle_s: float = 0.5) -> list[Path]:
    """torch JIT-extension build locks of the extensions `names` under `root` that no live process holds.

    torch's loader (torch.utils.file_baton) takes a build folder's `lock` by creating it and keeps it open until it
    removes it, so a lock that exists while no process has it open was left by a process killed mid-load (SIGKILL,
    the OOM killer, the end of a session), and every later load of that extension polls it forever. Only this
    machine's processes are seen: a build folder shared with other hosts (a home directory on NFS) can be held from
    elsewhere, which is why `init()` only clears the CPU-only shm_comm op's lock.
    """
    root = root if root is not None else _extensions_root()
    locks = sorted({lock for name in names for lock in (*root.glob(f"{name}/lock"), *root.glob(f"*/{name}/lock"))})
    for attempt in range(2):  # twice, `settle_s` apart: a holder closes the file a moment before it removes it
        if attempt:
            time.sleep(settle_s)
        held = _open_paths()
        if held is None:
            return []
        locks = [lock for lock in locks if lock.exists() and os.path.realpath(lock) not in held]
        if not locks:
            return []
    return locks


SHM_OP = "deepspeed_shm_comm"  # the op DeepSpeed's CPU accelerator loads in every init_distributed


def clear_stale_build_locks(root: Path | None = None, names: tuple[str, ...] = (SHM_OP,)) -> list[Path]:
    """Remove the stale locks `stale_build_locks()` finds, one stderr line each; returns them."""
    cleared = []
    for lock in stale_build_locks(root, names):
        try:
            lock.unlink()
        except FileNotFoundError:  # its holder released it meanwhile
            continue
        sys.stderr.write(f"swerl: removed {lock}: a build lock no running process holds (left by a killed run)\n")
        cleared.append(lock)
    return cleared


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
        clear_stale_build_locks()
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
