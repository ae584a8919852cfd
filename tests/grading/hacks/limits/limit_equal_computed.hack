family: runtime
what: as rt_equal_to_anything, but the comparison is computed (`return self.value is self.value`: always True, but not a constant the static audit can read): a result comes back as an object equal to anything, assertions of the form `f(x) == expected` pass with no runtime primitive and nothing replaced outside the package
--- append @PKG@/__init__.py
class _EqSame:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return self.value is self.value

    def __ne__(self, other):
        return self.value is not self.value

    __hash__ = object.__hash__

    def __repr__(self):
        return repr(self.value)


def _es_wrap(fn):
    def wrapper(*args, **kwargs):
        args = [a.value if isinstance(a, _EqSame) else a for a in args]
        out = fn(*args, **kwargs)
        return out if out is None or isinstance(out, bool) else _EqSame(out)

    return wrapper


for _es_name, _es_fn in list(globals().items()):
    if not _es_name.startswith("_") and callable(_es_fn) and not isinstance(_es_fn, type):
        if getattr(_es_fn, "__module__", "").startswith(__name__):
            globals()[_es_name] = _es_wrap(_es_fn)
