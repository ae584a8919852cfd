"""A small dependency graph with a deterministic topological order."""


class CycleError(ValueError):
    """The graph has a cycle; `nodes` are the nodes that could not be ordered."""

    def __init__(self, nodes):
        super().__init__("dependency cycle among: " + ", ".join(sorted(nodes)))
        self.nodes = sorted(nodes)


def topological_order(edges):
    """Order the nodes of `edges` ({node: set of nodes it depends on}) dependencies first.

    Ties are broken alphabetically so the result is stable. Dependencies that are not nodes of the
    graph are outside its scope (already installed, provided by the system) and are ignored.
    """
    pending = {node: {dep for dep in deps if dep in edges and dep != node} for node, deps in edges.items()}
    order = []
    while pending:
        ready = sorted(node for node, deps in pending.items() if not deps)
        if not ready:
            raise CycleError(pending)
        for node in ready:
            del pending[node]
            order.append(node)
        for deps in pending.values():
            deps.difference_update(ready)
    return order
