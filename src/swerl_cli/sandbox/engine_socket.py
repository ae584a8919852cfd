"""Whether anything listens at an engine's unix socket, asked with a socket that is closed again (sandbox/docker.py
asks before the docker SDK does: the SDK's client leaks the socket of a failed first request)."""

from __future__ import annotations

import socket

DEFAULT_SOCKET = "unix:///var/run/docker.sock"


def refused(url: str) -> str | None:
    """Why nothing listens at a unix socket URL (no such file, connection refused), or None: checked with a socket
    this function closes, because the SDK's client leaks the socket of a failed first request (a ResourceWarning
    that surfaces in whatever runs next)."""
    if not url.startswith("unix://"):
        return None  # tcp/ssh engines: the SDK's own request says why
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(5)
        s.connect(url[len("unix://") :])
    except OSError as e:
        return f"{url}: {e.strerror or e}"
    finally:
        s.close()
    return None
