"""Policy settings checked before any episode, so none is a traceback or an error record per episode: the spelling
of `--base-url` and `--device` with the config (no httpx, no torch), and whether this machine has the device when
the policy is built (torch imported then)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from swerl_cli.core.errors import ConfigError, SwerlError

_DEVICE = re.compile(r"(cpu|mps|(cuda|xpu)(:\d+)?)")


def check_base_url(url: str) -> None:
    """An OpenAI-compatible base URL is http(s)://HOST[:PORT][/path]; anything else (ftp://, a bare host, a typo'd
    scheme) is refused at once, not retried for a minute: ConfigError naming field 'base_url'.

    >>> check_base_url("http://127.0.0.1:8000/v1")
    """
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number raises here
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a port that is not a number, a bad IPv6 literal
        ok = False
    if not ok:
        raise ConfigError(
            f"field 'base_url': {url!r} is not an http(s) URL; give the server's OpenAI base URL, e.g. "
            "http://127.0.0.1:8000/v1"
        )


def check_device_name(device: str) -> None:
    """`cpu`, `cuda`, `cuda:N`, `xpu[:N]` or `mps`; anything else is a ConfigError naming field 'device'.

    >>> check_device_name("cuda:1")
    """
    if not _DEVICE.fullmatch(device):
        raise ConfigError(f"field 'device': {device!r} is not a device; use cpu, cuda, cuda:N, xpu[:N] or mps")


def require_device(device: str) -> None:
    """The device is present on this machine (a runtime failure, exit 1, like a missing Docker engine)."""
    import torch

    kind, _, index = device.partition(":")
    if kind == "cpu":
        return
    backend: Any = torch.backends.mps if kind == "mps" else getattr(torch, kind, None)
    available = bool(backend is not None and backend.is_available())
    count = int(getattr(backend, "device_count", lambda: 1)()) if available else 0
    if not available or (index and int(index) >= count):
        have = f"{count} {kind} device(s)" if available else f"no {kind.upper()} device usable by torch"
        raise SwerlError(f"--device {device}: this machine has {have}; use --device cpu or another device")
