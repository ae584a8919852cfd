"""Name resolution for the static audit (audit_ast.py): what a name or an expression of one parsed Python file refers
to through its imports, per scope, and which constant paths an expression may hold.

`qual` gives the dotted name (`import sys as s; s.settrace` is `sys.settrace`) through imports, builtins the file
does not rebind, `__import__`/`importlib.import_module` of a constant, `getattr(x, "const")` and
`sys.modules["const"]`; a local variable named like an imported module is not the module. `paths` follows names
assigned from constants and `os.path.join`/`pathlib` arithmetic; `outside` says which of them leave the repository.
"""

from __future__ import annotations

import ast
import posixpath
import sys

STDLIB = frozenset(sys.stdlib_module_names) | {"builtins", "__builtins__"}
RUNNER = frozenset({"pytest", "_pytest", "pluggy", "py", "iniconfig"})
DEV_OK = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
BUILTINS = frozenset({"compile", "setattr", "delattr", "open", "__import__", "getattr", "vars", "str"})


def root_of(q: str | None) -> str:
    return (q or "").split(".", 1)[0]


class SourceNames:
    """One parsed file's names: its imports per scope, the constants names hold, and the paths expressions may hold."""

    def __init__(self, tree: ast.Module, context: str, root: str):
        self.tree, self.context, self.root = tree, context, root.rstrip("/") or "/"
        self.alias: dict[str, str] = {}
        self.consts: dict[str, set[str]] = {}
        self.scope: dict[int, int] = {}  # id(Name node) -> id(its function), 0 for the module
        self.binds: dict[int, set[str]] = {0: set()}  # names each scope binds other than by import
        self._scan(tree, 0)
        for node in ast.walk(tree):  # after every import is known: constants may come from calls
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.consts.setdefault(node.targets[0].id, set()).update(self.paths(node.value, names=False))
            elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                items = node.iter.elts if isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)) else []
                for e in items:
                    self.consts.setdefault(node.target.id, set()).update(self.paths(e, names=False))

    def _scan(self, node: ast.AST, scope: int) -> None:
        """Imports, and the names each function (or the module) binds, so that a local variable named like an
        imported module (`t = Template()` beside `import typing as t`) is not taken for the module."""
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, ast.Import):
                for a in child.names:
                    self.alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(child, ast.ImportFrom):
                mod = "." * child.level + (child.module or "")
                for a in child.names:
                    self.alias[a.asname or a.name] = f"{mod}.{a.name}"
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if not isinstance(child, ast.Lambda):
                    self.binds[scope].add(child.name)
                inner = id(child)
                self.binds[inner] = {a.arg for a in ast.walk(child.args) if isinstance(a, ast.arg)}
            elif isinstance(child, ast.ClassDef):
                self.binds[scope].add(child.name)
            elif isinstance(child, ast.Name):
                self.scope[id(child)] = scope
                if isinstance(child.ctx, (ast.Store, ast.Del)):
                    self.binds[scope].add(child.id)
            self._scan(child, inner)

    def qual(self, e: ast.AST) -> str | None:
        """The dotted name an expression refers to through imports and builtins, or None."""
        if isinstance(e, ast.Name):
            local = self.binds.get(self.scope.get(id(e), 0), set()) | self.binds[0]
            if e.id in local:
                return None  # a variable (somewhere in this scope or the module), not the module or builtin
            if e.id in self.alias:
                return self.alias[e.id]
            if e.id == "__builtins__" or e.id in BUILTINS:
                return "builtins" if e.id == "__builtins__" else f"builtins.{e.id}"
            return None
        if isinstance(e, ast.Attribute):
            q = self.qual(e.value)
            return f"{q}.{e.attr}" if q else None
        if isinstance(e, ast.Call) and e.args and isinstance(e.args[0], ast.Constant):
            f, first = self.qual(e.func), e.args[0].value
            if f in ("builtins.__import__", "importlib.import_module") and isinstance(first, str):
                return first.split(".")[0] if f == "builtins.__import__" else first
            if f == "builtins.getattr" and len(e.args) >= 2 and isinstance(e.args[1], ast.Constant):
                q = self.qual(e.args[0])
                return f"{q}.{e.args[1].value!s}" if q else None
        if isinstance(e, ast.Subscript) and self.qual(e.value) == "sys.modules" and isinstance(e.slice, ast.Constant):
            return str(e.slice.value)
        return None

    def guarded(self, q: str | None) -> bool:
        """Whether a name belongs to the standard library or the runner (its attributes are not the patch's)."""
        r = root_of(q)
        if r in RUNNER:
            return self.context != "runner"
        return r in STDLIB and self.context != "infra" and not (q or "").startswith(".")

    def paths(self, e: ast.AST, names: bool = True) -> set[str]:
        """The constant paths (or their prefixes) an expression may hold; `~` and "\\0..." stand for places."""
        if isinstance(e, ast.Constant) and isinstance(e.value, str):
            return {e.value}
        if isinstance(e, ast.JoinedStr) and e.values:
            return self.paths(e.values[0].value if isinstance(e.values[0], ast.FormattedValue) else e.values[0])
        if isinstance(e, ast.Name):
            return set(self.consts.get(e.id, ())) if names else set()
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Div)):
            left = self.paths(e.left, names)
            right = {p for p in self.paths(e.right, names) if p.startswith("/")} if isinstance(e.op, ast.Div) else set()
            return right or left
        if isinstance(e, ast.Attribute):
            if e.attr == "parent":
                return {posixpath.dirname(p) for p in self.paths(e.value, names)}
            if e.attr == "__file__" and self.qual(e.value):
                return {"\0an installed module's directory"}
            q = self.qual(e)
            return {"\0site-packages"} if q == "site.USER_SITE" else set()
        if isinstance(e, ast.Call):
            q = self.qual(e.func) or ""
            if q.startswith("site.") or q.startswith("sysconfig.get_path"):
                return {"\0site-packages"}
            if q in ("tempfile.gettempdir", "tempfile.gettempdirb"):
                return {"/tmp"}
            if q in ("pathlib.Path.home", "os.path.expanduser") and not e.args:
                return {"~"}
            if q in ("os.getenv", "os.environ.get") and e.args and isinstance(e.args[0], ast.Constant):
                return {"~"} if e.args[0].value == "HOME" else set()
            args = e.args
            if isinstance(e.func, ast.Attribute) and e.func.attr == "joinpath":
                args = [e.func.value, *args]
            elif q not in ("os.path.join", "posixpath.join") and not q.startswith("pathlib."):
                args = args[:1] if q.startswith("os.path.") or q in ("builtins.str", "os.fspath") else []
            found = [self.paths(a, names) for a in args]
            absolute = [s for s in found if any(p.startswith(("/", "~", "\0")) for p in s)]
            return absolute[-1] if absolute else (found[0] if found else set())
        if isinstance(e, ast.Subscript) and self.qual(e.value) == "os.environ" and isinstance(e.slice, ast.Constant):
            return {"~"} if e.slice.value == "HOME" else set()
        return set()

    def outside(self, e: ast.AST) -> str | None:
        """The first constant path `e` may hold that lies outside the repository, or None."""
        for p in sorted(self.paths(e)):
            if p.startswith(("~", "\0")):
                return p.lstrip("\0")
            if p.startswith("/"):
                n = posixpath.normpath(p)
                if n not in DEV_OK and n != self.root and not n.startswith(self.root + "/"):
                    return p
            elif posixpath.normpath(p).startswith(".."):
                return p
        return None
