"""Package name normalisation."""

import re

_SEPARATORS = re.compile(r"[-_.]+")


def canonical_name(name):
    """The comparable form of a package name: "Foo_Bar" -> "foo-bar"."""
    return _SEPARATORS.sub("-", name).lower()
