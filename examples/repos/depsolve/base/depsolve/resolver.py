"""Install order for a set of root requirements."""

from depsolve.graph import CycleError, topological_order
from depsolve.requirements import Requirement

__all__ = ["CycleError", "install_order"]


def install_order(registry, roots):
    """Names of the packages needed by `roots` (requirement strings), dependencies first."""
    edges = {}
    todo = [Requirement.parse(r) for r in roots]
    while todo:
        requirement = todo.pop()
        package = registry.get(requirement.name)
        if package.name in edges:
            continue
        edges[package.name] = {dep.name for dep in package.requires}
        todo.extend(package.requires)
    return topological_order(edges)
