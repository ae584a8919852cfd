"""Install order for packages and their requirements."""

from depsolve.registry import Package, Registry, UnknownPackage
from depsolve.requirements import Requirement
from depsolve.resolver import CycleError, install_order

__all__ = ["CycleError", "Package", "Registry", "Requirement", "UnknownPackage", "install_order"]
