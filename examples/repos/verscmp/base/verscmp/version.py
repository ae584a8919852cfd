"""The Version type."""

import functools
import re

_VERSION = re.compile(r"^(\d+\.\d+\.\d+)(?:-([0-9A-Za-z.-]+))?$")


def _split(text):
    """Dot-separated identifiers of a version core or pre-release tag."""
    return tuple(text.split("."))


@functools.total_ordering
class Version:
    """A semantic version: `Version("2.1.0-rc.1")`."""

    def __init__(self, text):
        match = _VERSION.match(text)
        if match is None:
            raise ValueError(f"not a semantic version: {text!r}")
        self.text = text
        self.core = _split(match.group(1))
        self.prerelease = _split(match.group(2)) if match.group(2) else ()

    def _key(self):
        # A release (no pre-release tag) sorts after every pre-release of the same core.
        return (self.core, not self.prerelease, self.prerelease)

    def __eq__(self, other):
        return self._key() == other._key()

    def __lt__(self, other):
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"Version({self.text!r})"


def latest(versions):
    """The highest of `versions` (strings), as given."""
    return max(versions, key=Version)
