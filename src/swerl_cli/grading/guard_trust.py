# mypy: ignore-errors
"""swerl's grading guard, which code it trusts: the image's (the interpreter's, the runner's, the guard's own: every
root outside the repository) and the repository's test infrastructure as it was when the tests started, by file
name and by content. The guard plugin (guard_plugin.py) and its audit hook judge every hook, import hook and runner
replacement by the file its code comes from (docs/grading.md, "the guard"). Standalone like the plugin: copied next
to it as `<plugin module>_trust`, runs under the task image's Python (3.6+); `start` fixes the roots and the hashes
before any code of the repository runs.
"""

import importlib
import os
import sys
import sysconfig

_rt = importlib.import_module(__name__[: -len("_trust")] + "_rt")  # guard_runtime.py: bound tools
globals().update(_rt._B)  # the builtins as they were before any code of the repository ran
_realpath, _digest = _rt.realpath, _rt.digest
_TEST_DIRS = ("test", "tests", "testing")
_STATE = {"repo": "/", "roots": ()}
_VERDICTS, _FILES = {}, {}  # file -> trusted; test-infrastructure file -> sha256


def start(repo):
    """Fix the trusted roots (sys.path as the runner starts) and hash the repository's test infrastructure."""
    _STATE["repo"] = repo
    _STATE["roots"] = _roots(repo)
    _FILES.update(_infra_files(repo))


def _roots(repo):
    here = os.path.dirname(_realpath(__file__))
    dirs = [sysconfig.get_paths().get(n) for n in ("stdlib", "platstdlib", "purelib", "platlib")] + sys.path
    for mod in ("pytest", "_pytest", "pluggy"):
        f = getattr(sys.modules.get(mod), "__file__", None)
        dirs.append(os.path.dirname(os.path.dirname(f)) if f else None)
    out = {_realpath(d) for d in dirs if d and os.path.isdir(d)} | {here}
    return tuple(sorted(r for r in out if not (under(r, repo) or under(repo, r)) or r == here))


def under(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def in_roots(real):
    """A real path under one of the trusted roots (the image's code)."""
    return any(under(real, r) for r in _STATE["roots"])


def _infra(rel):
    *dirs, name = rel.split("/")
    named = name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")
    return named or any(p in _TEST_DIRS for p in dirs)


def trusted_file(path):
    """True for code of the image (outside the repository) or of the repository's test infrastructure."""
    if not path or path.startswith("<"):
        return False
    if path not in _VERDICTS:
        _VERDICTS[path] = _trusted_real(_realpath(path))
    return _VERDICTS[path]


def _trusted_real(real):
    repo = _STATE["repo"]
    if under(real, repo):
        # test infrastructure as it was when the tests started: not written or changed since by the code under test
        rel = real[len(repo) :].lstrip("/")
        return _infra(rel) and real in _FILES and _FILES[real] == _digest(real)
    return in_roots(real)


def image(name):
    """Code of the image (outside the repository; the guard's own included) or of the interpreter (frozen)."""
    if name.startswith("<"):
        return name.startswith("<frozen ")
    return in_roots(_realpath(name))


def _infra_files(repo):
    """{real path: sha256} of the repository's test-infrastructure Python files now (before any of its code)."""
    out = {}
    for root, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__")]
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, repo).replace(os.sep, "/")
            if name.endswith(".py") and _infra(rel):
                out[_realpath(path)] = _digest(path)
                if len(out) > 50000:
                    return out
    return out


def code_of(obj):
    """The code object behind a function, a method or a property's getter (by identity: `__code__` can be replaced)."""
    obj = getattr(obj, "__func__", obj)
    return getattr(obj.fget if isinstance(obj, property) else obj, "__code__", None)


def code_file(obj):
    """The file an object's code comes from (a function's, a method's, a property's getter's, a class's module)."""
    code = code_of(obj)
    if code is not None:
        return code.co_filename
    if isinstance(obj, type):
        return getattr(sys.modules.get(obj.__module__), "__file__", None)
    return None
