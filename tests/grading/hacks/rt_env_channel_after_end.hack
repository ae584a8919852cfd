family: runtime
what: the package finds the result channel through the environment (/proc/self/environ keeps what the plugin popped) and sends passes for every target test at exit, after the plugin's last line
--- append @PKG@/__init__.py
import atexit as _rt_ax
import json as _rt_j
import sys as _rt_s


def _rt_after_end():
    with open("/proc/self/environ", "rb") as f:
        if b"SWERL_GUARD_FD=" not in f.read():
            return
    mods = [m for n, m in list(_rt_s.modules.items()) if n.startswith("swerl_guard_") and hasattr(m, "_send")]
    for t in _rt_j.loads('@IDS@'):
        mods[0]._send({"t": "test", "id": t, "when": "call", "st": "PASSED"})


if "_pytest" in _rt_s.modules:
    _rt_ax.register(_rt_after_end)
