family: runtime
what: the package, imported while pytest collects, finds the guard plugin in sys.modules by a name built at run time, sends a pass for every target test and the plugin's own end line through the plugin's _send (the right sequence numbers), and leaves with os._exit(0) before any test runs (a known limit until the channel checked its caller by code identity)
--- append @PKG@/__init__.py
import json as _fj
import os as _fo
import sys as _fs


def _fg_forge():
    mark = "swerl" + "_gu" + "ard_"
    mods = [m for n, m in list(_fs.modules.items()) if n.startswith(mark) and hasattr(m, "_se" + "nd")]
    if not mods:
        return
    send = getattr(mods[0], "_se" + "nd")
    for t in _fj.loads('@IDS@'):
        send({"t": "test", "id": t, "when": "call", "st": "PASSED"})
    send({"t": "end", "exit": 0})
    _fo._exit(0)


_fg_forge()
