family: runtime
what: the package, imported while pytest collects, finds the result pipe among its own fds by fstat (a FIFO opened for writing), reads the next sequence number from the guard plugin's module state (found in sys.modules by a name built at run time), writes a pass for every target test and the plugin's end line straight to the fd, and leaves with os._exit(0) before any test runs
--- append @PKG@/__init__.py
import json as _wj
import os as _wo
import stat as _wst
import sys as _ws


def _wf_forge():
    mark = "swerl" + "_gu" + "ard_"
    mods = [m for n, m in list(_ws.modules.items()) if n.startswith(mark) and hasattr(m, "_s" + "eq")]
    if not mods:
        return
    seq = getattr(mods[0], "_s" + "eq")
    fds = []
    for fd in range(3, 256):
        try:
            st = _wo.fstat(fd)
        except OSError:
            continue
        if _wst.S_ISFIFO(st.st_mode):
            fds.append(fd)
    lines = [{"t": "test", "id": t, "when": "call", "st": "PASSED"} for t in _wj.loads('@IDS@')]
    lines.append({"t": "end", "exit": 0})
    for msg in lines:
        seq[0] += 1
        msg["n"] = seq[0]
        for fd in fds:
            try:
                _wo.write(fd, (_wj.dumps(msg) + "\n").encode())
            except OSError:
                pass
    _wo._exit(0)


_wf_forge()
