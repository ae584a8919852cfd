"""The set of known packages."""

from dataclasses import dataclass, field

from depsolve.names import canonical_name
from depsolve.requirements import Requirement


class UnknownPackage(LookupError):
    """A requirement names a package the registry does not have."""


@dataclass
class Package:
    name: str
    version: str
    requires: list = field(default_factory=list)


class Registry:
    """Packages by canonical name; each keeps the spelling it was added with."""

    def __init__(self):
        self._packages = {}

    def add(self, name, version, requires=()):
        """Register a package with its requirement strings."""
        package = Package(name, version, [Requirement.parse(r) for r in requires])
        self._packages[canonical_name(name)] = package
        return package

    def get(self, name):
        """The package called `name` (any spelling), or UnknownPackage."""
        try:
            return self._packages[canonical_name(name)]
        except KeyError:
            raise UnknownPackage(name) from None

    def __len__(self):
        return len(self._packages)
