# mypy: ignore-errors
"""swerl's grading guard: a pytest plugin the grader copies to a random directory outside the repository and loads
with `-p`, so it is imported before any code of the repository runs (docs/grading.md, "the guard"). Standalone: it
runs under the task image's Python (3.6+: no annotations) and pytest, never inside swerl. It records the runner's
state (pytest, pluggy, unittest, builtins by identity; test-infrastructure file hashes; import hooks), checks it
before every report, and sends statuses and findings down a pipe to the wrapper (a sequence number on each line).
Which code it trusts is guard_trust.py's, copied next to it as `<module>_trust`. Its channel and its sending hooks
check who calls them by code object identity (not by file name): the plugin's own functions, and pluggy's hook
machinery as it was when the plugin loaded; any other caller is a finding and its message is dropped. The plugin
keeps no reference to pytest's config.
"""

import builtins
import importlib
import os
import sys
import types

_rt = importlib.import_module(__name__ + "_rt")  # guard_runtime.py: bound tools, audit hook, safe path
_trust = importlib.import_module(__name__ + "_trust")  # guard_trust.py: which code files are trusted
globals().update(_rt._B)  # the builtins as they were before any code of the repository ran
_FD = os.environ.pop("SWERL_GUARD_FD", None)
_FD_NO = int(_FD) if _FD is not None else None
_realpath = _rt.realpath
_REPO = _realpath(os.environ.pop("SWERL_GUARD_REPO", None) or os.getcwd())
for _k in ("PYTEST_ADDOPTS", "PYTHONPATH", "PYTHONSAFEPATH"):  # the wrapper's additions are for this process only
    _old = os.environ.pop("SWERL_GUARD_OLD_" + _k, None)
    if _old == "__swerl_unset__":
        os.environ.pop(_k, None)
    elif _old is not None:
        os.environ[_k] = _old
_write, _frame = os.write, sys._getframe
_seq = [0]
_OWN, _PLUGGY = {}, {}  # id(code) -> code: this module's own, pluggy's at load (identity, kept alive)
_sent = set()
_KINDS = (types.FunctionType, type, types.BuiltinFunctionType, property, classmethod, staticmethod)
_trusted_file, _code_file, _image, _under = _trust.trusted_file, _trust.code_file, _trust.image, _trust.under
_code_of = _trust.code_of


def _send(msg):
    if _FD_NO is None:
        return
    code = _frame(1).f_code
    if _OWN.get(id(code)) is not code:  # not the plugin's own code: the message is replaced by a finding
        msg = {"t": "finding", "what": f"the result channel called by {code.co_filename} ({code.co_name})"}
    _seq[0] += 1
    msg["n"] = _seq[0]
    data = _rt.encode(msg)
    try:
        while data:
            data = data[_write(_FD_NO, data) :]
    except OSError:
        pass


def _finding(text):
    if text not in _sent:
        _sent.add(text)
        _send({"t": "finding", "what": text})


def _watched_modules():
    names = ("pytest", "builtins", "unittest.case", "unittest.result", "unittest.suite", "sys")
    mods = sorted(sys.modules.items())
    return [m for n, m in mods if m is not None and (n in names or n.split(".")[0] in ("_pytest", "pluggy"))]


def _snapshot():
    out = []
    for mod in _watched_modules():
        mname = mod.__name__
        for key, val in list(vars(mod).items()):
            if not isinstance(val, _KINDS) or (key.startswith("__") and key.endswith("__")):
                continue
            if mname == "sys" and key not in ("exit", "exc_info", "exception"):
                continue
            out.append((mod, key, val, mname + "." + key, _code_of(val)))
            if isinstance(val, type) and val.__module__ == mname:
                for ck, cv in list(vars(val).items()):
                    if isinstance(cv, _KINDS) and ck not in ("__dict__", "__weakref__"):
                        out.append((val, ck, cv, mname + "." + key + "." + ck, _code_of(cv)))
    return out


_MISSING, _SNAP, _IMPORT_HOOKS, _OK_IMPLS, _TRACE_OK = object(), [], set(), {}, set()
_STATE = {"hooks": []}


def _codes(obj, out):
    """Every code object of a function or of a class's functions, nested ones included, into out (id -> code)."""
    objs = list(vars(obj).values()) if isinstance(obj, type) else [obj]
    todo = [c for c in map(_code_of, objs) if isinstance(c, types.CodeType)]
    while todo:
        c = todo.pop()
        out[id(c)] = c
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


def _by_pluggy(name):
    """True when the hook `name` of this plugin was called by pluggy's hook machinery (the frame above it)."""
    code = _frame(2).f_code
    if not _PLUGGY or _PLUGGY.get(id(code)) is code:  # no pluggy module found (a runner this plugin does not know)
        return True
    _finding(f"hook {name} of the guard called by {code.co_filename} ({code.co_name}), not by pytest")
    return False


def _check(config=None):
    try:
        _check_state(config)
    except Exception as e:  # a runner this plugin does not know: a finding (the control run has it too)
        _finding(f"guard check failed: {type(e).__name__}")


def _check_state(config):
    """Findings: runner internals replaced since the snapshot; hooks or import hooks from untrusted code."""
    for owner, key, val, label, code in _SNAP:
        cur = vars(owner).get(key, _MISSING)
        if cur is val and _code_of(cur) is code:
            continue
        if cur is val:  # the same function object running other code: no file can vouch for that
            _finding("code replaced: " + label)
            continue
        # pytest replaces some of its own functions as it configures (legacypath): code of the image may
        # replace runner internals; nothing may replace a builtin, and the code under test may replace nothing.
        strict = cur is _MISSING or owner is builtins or owner is sys
        if strict or not _trusted_file(_code_file(cur)):
            _finding("replaced: " + label)
    for label, owner, key, val in _STATE["hooks"]:
        if getattr(owner, key, _MISSING) is not val:
            _finding("replaced: " + label)
    if config is not None:
        for name, caller in list(vars(config.hook).items()):
            get = getattr(caller, "get_hookimpls", None)
            for impl in get() if get else ():
                if id(impl.function) in _OK_IMPLS:
                    continue
                f = _code_file(impl.function)
                if _trusted_file(f):
                    _OK_IMPLS[id(impl.function)] = impl.function
                else:
                    _finding(f"hook {name} implemented in {f}")
    for finder in list(sys.meta_path) + list(sys.path_hooks):
        if id(finder) in _IMPORT_HOOKS:
            continue
        f = _code_file(finder if isinstance(finder, (type, types.FunctionType)) else type(finder))
        if f is not None and not _trusted_file(f):
            _finding(f"import hook from {f}")
    _check_hooks()


def _check_hooks():
    """Trace and profile functions, and sys.monitoring tools, set since the guard loaded by untrusted code."""
    for label, fn in _rt.hooks_in_use():
        if (label, id(fn)) in _TRACE_OK:
            continue
        f = _code_file(fn if isinstance(fn, (types.FunctionType, types.MethodType)) else type(fn))
        if isinstance(fn, str) or f is None or not _trusted_file(f):
            _finding(f"{label} set by the code under test ({f or fn})")


def _raised_in(excinfo):
    """The innermost frame of a traceback that is not the image's code (pytest, libraries): its file."""
    tb = getattr(excinfo, "tb", None) or getattr(excinfo, "_excinfo", (None, None, None))[2]
    last = None
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if not _trust.in_roots(_realpath(f)):
            last = f
        tb = tb.tb_next
    return last


def _status(report):
    xfail = hasattr(report, "wasxfail")
    if report.failed:
        return "FAILED" if report.when == "call" else "ERROR"
    if report.skipped:
        return "XFAIL" if xfail else "SKIPPED"
    if report.when == "call":
        return "XPASS" if xfail else "PASSED"
    return None


def _cross_check(item, call, report):
    exc = call.excinfo
    skipish = ("Skipped", "XFailed", "SkipTest", "Exit")
    if exc is not None and report.passed:
        _finding(f"report rewritten: {item.nodeid} raised {exc.typename} but passed")
    if exc is not None and exc.type.__name__ in skipish:
        where = _raised_in(exc)
        if where is not None and not _trusted_file(where):
            _finding(f"{exc.typename} raised by the code under test ({where}) in {item.nodeid}")
    if report.skipped and hasattr(report, "wasxfail") and exc is not None and exc.type.__name__ not in skipish:
        marks = item.iter_markers("xfail") if hasattr(item, "iter_markers") else [item.get_marker("xfail")]
        if not any(m is not None for m in marks):
            _finding(f"xfail without an xfail mark: {item.nodeid}")
    f = _code_file(getattr(item, "obj", None))
    if f is not None and not _trusted_file(f):
        _finding(f"test {item.nodeid} runs code from {f}")


if _FD is not None:
    _rt.restore_path(_REPO)
    _trust.start(_REPO)
    _SNAP = _snapshot()
    _IMPORT_HOOKS = {id(h) for h in list(sys.meta_path) + list(sys.path_hooks)}
    _TRACE_OK = {(k, id(v)) for k, v in _rt.hooks_in_use()}
    _KEEP = (list(sys.meta_path), list(sys.path_hooks), _rt.hooks_in_use())  # alive, so their ids stay theirs
    for _n, _m in sorted(list(sys.modules.items())):
        if _m is not None and (_n == "pluggy" or _n.startswith("pluggy.")):
            for _v in list(vars(_m).values()):
                if getattr(_v, "__module__", None) == _n:
                    _codes(_v, _PLUGGY)
    _OWN[id(_frame(0).f_code)] = _frame(0).f_code  # this module's top level
    for _v in (_send, _finding, _check, _check_state, _check_hooks, _cross_check, _by_pluggy):
        _codes(_v, _OWN)
    _send({"t": "hello", "pid": os.getpid(), "repo": _REPO})
    for _name in _rt.shadowed(_REPO, _under):
        _finding(f"module {_name} was loaded from the repository before the runner (sys.path order)")
    _rt.Watch(_trusted_file, _finding, _image).install()

    import pytest

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(config):
        pm = config.pluginmanager
        hooks = [("config.hook." + k, config.hook, k, v) for k, v in list(vars(config.hook).items())]
        for k in ("_hookexec", "_inner_hookexec"):
            if k in vars(pm):
                hooks.append(("pluginmanager." + k, pm, k, vars(pm)[k]))
        _STATE["hooks"] = hooks

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(item, call):
        if call.when == "call":
            _check(item.config)
        outcome = yield
        try:
            report = outcome.get_result()
        except BaseException:
            return
        try:
            _cross_check(item, call, report)
        except Exception as e:
            _finding(f"guard check failed: {type(e).__name__}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_plugin_registered(plugin, manager):
        f = getattr(plugin, "__file__", None)
        if f:
            _trusted_file(f)  # judged now, as it is imported: a conftest written or changed at run time is not

    @pytest.hookimpl(tryfirst=True)
    def pytest_itemcollected(item):
        f = str(getattr(item, "fspath", "") or "")
        if f and f.endswith(".py") and not _trusted_file(f):
            _finding(f"test file {f} was written or changed while the tests ran")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(report):
        _check_hooks()
        st = _status(report)
        if st is not None and _by_pluggy("pytest_runtest_logreport"):
            _send({"t": "test", "id": report.nodeid, "when": report.when, "st": st})

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(report):
        if report.failed and _by_pluggy("pytest_collectreport"):
            _send({"t": "test", "id": report.nodeid, "when": "collect", "st": "ERROR"})

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(session):
        _check(session.config)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(session, exitstatus):
        _check(session.config)
        if _by_pluggy("pytest_sessionfinish"):
            _send({"t": "end", "exit": int(exitstatus)})

    for _v in list(globals().values()):
        if isinstance(_v, types.FunctionType) and _v.__module__ == __name__:
            _codes(_v, _OWN)
