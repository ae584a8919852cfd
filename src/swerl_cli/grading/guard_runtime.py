# mypy: ignore-errors
"""swerl's grading guard, the interpreter half: what the guard plugin (guard_plugin.py) uses so that code under test
cannot bend the guard's own calls, and the runtime primitives it watches (docs/grading.md, "Threat model").
Standalone like the plugin: copied next to it as `<plugin module>_rt`, runs under the task image's Python (3.6+).

- The guard's own tools are bound when it loads, before any code of the repository runs: builtins (`BUILTINS`),
  `os` primitives, its own realpath, its own JSON encoding. Replacing a standard-library function later
  (`json.dumps`, `posixpath._joinrealpath`, `hashlib.sha256`) does not reach them.
- An audit hook (3.8+; it cannot be removed) reports, with the code under test on the stack: a trace or profile
  hook set, garbage-collector walks, ctypes, and code compiled (or built) under the name of a file the guard trusts
  when the source is not that file's (also from any thread but the main one). A function of the image's or of the
  tests whose code or defaults are replaced is reported whatever the stack. It refuses to let the test
  process replace itself (exec): a new image would hold the result pipe without the guard.
- Safe path: the wrapper sets PYTHONSAFEPATH (3.11+); `restore_path` puts the entry Python left out at the end of
  sys.path, and `shadowed` names modules loaded from the repository before the plugin (older Pythons).
"""

import builtins
import hashlib
import os
import sys
import threading

BUILTINS = (
    "any", "all", "bool", "callable", "dict", "frozenset", "getattr", "hasattr", "id", "int", "isinstance",
    "len", "list", "open", "ord", "range", "repr", "set", "sorted", "str", "tuple", "type", "vars", "zip",
    "Exception", "BaseException", "OSError", "ValueError", "KeyError", "RuntimeError",
)  # fmt: skip
_B = {n: getattr(builtins, n) for n in BUILTINS if hasattr(builtins, n)}
globals().update(_B)
_lstat, _readlink, _getcwd, _write, _getpid = os.lstat, os.readlink, os.getcwd, os.write, os.getpid
_sha256, _getframe, _S_IFMT, _S_IFLNK = hashlib.sha256, sys._getframe, 0o170000, 0o120000
_str = str.__str__
_current_thread, _main_thread = threading.current_thread, threading.main_thread


def realpath(path):
    """os.path.realpath with the primitives bound at load (no posixpath global is looked up at call time)."""
    path = _str(path)
    if not path.startswith("/"):
        path = _getcwd().rstrip("/") + "/" + path
    done, todo, hops = [], [p for p in path.split("/") if p], 0
    while todo:
        part = todo.pop(0)
        if part == ".":
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        cur = "/" + "/".join(done + [part])
        try:
            is_link = (_lstat(cur).st_mode & _S_IFMT) == _S_IFLNK
        except OSError:
            is_link = False
        if is_link and hops < 40:
            hops += 1
            target = _readlink(cur)
            if target.startswith("/"):
                done = []
            todo = [p for p in target.split("/") if p] + todo
            continue
        done.append(part)
    return "/" + "/".join(done)


def digest(path):
    try:
        with open(path, "rb") as f:
            return _sha256(f.read()).hexdigest()
    except OSError:
        return None


def encode(msg):
    """One JSON object line from str, int and bool values, with no library call."""
    parts = []
    for key, val in msg.items():
        if val is True or val is False:
            text = "true" if val else "false"
        elif type(val) is int:
            text = f"{val:d}"
        else:
            text = _quote(_str(val) if isinstance(val, str) else repr(val))
        parts.append(_quote(key) + ": " + text)
    return ("{" + ", ".join(parts) + "}\n").encode("utf-8", "replace")


def _quote(s):
    out = []
    for ch in s:
        o = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif o < 32 or 0xD800 <= o < 0xE000:
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def restore_path(repo):
    """Under safe path (3.11+) Python left out the entry `python -m`/`-c` or a script puts first: append it."""
    if not getattr(sys.flags, "safe_path", False):
        return
    argv = list(getattr(sys, "orig_argv", ()))
    entry = repo if ("-m" in argv or "-c" in argv) else None
    if entry is None and sys.argv and sys.argv[0]:
        entry = realpath(sys.argv[0]).rsplit("/", 1)[0] or "/"
    if entry and entry not in sys.path:
        sys.path.append(entry)


def shadowed(repo, under):
    """Modules loaded from the repository before the guard (nothing of the repository runs before it)."""
    out = []
    for name, mod in sorted(list(sys.modules.items())):
        f = getattr(mod, "__file__", None)
        if isinstance(f, str) and under(realpath(f), repo):
            out.append(name)
    return out


class Watch:
    """The audit hook: `trusted(file)` judges a code file, `finding(text)` reports, `pid` is the test process."""

    EVENTS = frozenset(
        {
            "sys.settrace", "sys.setprofile", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
            "object.__setattr__", "compile", "code.__new__", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata",
            "os.exec", "sys.monitoring.register_callback",
        }
    )  # fmt: skip

    def __init__(self, trusted, finding, image):
        self.trusted, self.finding, self.image, self.pid = trusted, finding, image, _getpid()

    def install(self):
        if hasattr(sys, "addaudithook"):
            sys.addaudithook(self)

    def untrusted_frame(self):
        """The file of the innermost frame on the stack that is neither the image's (the guard's own included) nor
        trusted test code."""
        f = _getframe(1)
        while f is not None:
            name = f.f_code.co_filename
            if not self.image(name) and not self.trusted(name):
                return name
            f = f.f_back
        return None

    def __call__(self, event, args):
        if event not in self.EVENTS:
            return
        if event == "os.exec" and _getpid() == self.pid:
            self.finding("the test process tried to replace itself (exec)")
            raise RuntimeError("swerl-guard: the test process may not exec")
        try:
            self._check(event, args)
        except Exception:  # an audit hook that raises would break the operation of honest code
            pass

    def _check(self, event, args):
        if event == "compile" or event == "code.__new__":
            src, name = (args[0], args[1]) if event == "compile" else (None, args[1])
            if isinstance(name, str) and self._claims(name) and not self._genuine(src, name):
                self.finding("code compiled under the name of " + name)
            return
        if event == "object.__setattr__":
            if args[1] not in ("__code__", "__defaults__", "__kwdefaults__"):
                return
            # judged by its target: no honest code rewrites a function of the image (or the code of one of the
            # tests), from any stack or thread (a thread whose target is `setattr` has no frame of the repository)
            code = getattr(args[0], "__code__", None)
            owner = getattr(code, "co_filename", None)
            claimed = isinstance(owner, str) and (self.image(owner) or (args[1] == "__code__" and self.trusted(owner)))
            if claimed and not _coroutine_mark(args[1], code, args[2]):
                self.finding(f"{args[1]} of {getattr(args[0], '__qualname__', '?')} ({owner}) replaced")
                return
        where = self.untrusted_frame()
        if where is not None:
            self.finding(event + " from " + where)

    def _claims(self, name):
        """A code file name the guard would trust: the interpreter's frozen modules, the image's, test code."""
        return name.startswith("<frozen ") or (not name.startswith("<") and (self.image(name) or self.trusted(name)))

    def _genuine(self, src, name):
        """The source compiled is the file's own (an import compiles it), or nothing of the code under test is on
        the stack of the main thread (pytest's assertion rewriting compiles a tree under the test file's name; a
        worker thread whose target is `compile` has no frame of the repository on its stack)."""
        if isinstance(src, (bytes, str)) and not name.startswith("<"):
            try:
                with open(name, "rb") as f:
                    data = f.read()
            except OSError:
                data = None
            if data == (src if isinstance(src, bytes) else src.encode("utf-8", "surrogateescape")):
                return True
        return self.untrusted_frame() is None and _current_thread() is _main_thread()


def _coroutine_mark(attr, old, new):
    """`types.coroutine` on a generator function (asyncio does it as it is imported): the same code with only the
    CO_ITERABLE_COROUTINE flag added. Any other change of flags (a plain function made a coroutine) is not this."""
    if attr != "__code__" or not isinstance(new, type(old)) or not old.co_flags & 0x20:  # CO_GENERATOR
        return False
    return new.co_flags == old.co_flags | 0x100 and new.co_code == old.co_code and new.co_name == old.co_name


def hooks_in_use():
    """The trace and profile functions of this thread and the threading module, and sys.monitoring's tools."""
    out = [("sys.gettrace", sys.gettrace()), ("sys.getprofile", sys.getprofile())]
    th = sys.modules.get("threading")
    for key in ("_trace_hook", "_profile_hook"):
        out.append(("threading." + key, getattr(th, key, None)))
    mon = getattr(sys, "monitoring", None)
    for tool in range(6) if mon is not None else ():
        name = mon.get_tool(tool)
        if name is not None:
            out.append(("sys.monitoring tool " + str(tool), name))
    return [(k, v) for k, v in out if v is not None]
