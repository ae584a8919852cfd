"""The module import graph of src/swerl_cli, imports inside functions included: no cycle, and the edges
docs/architecture.md rules out between packages of one layer (the layer order itself: test_layering.py).

An edge is an import written in the file (`import a.b`, `from a.b import c`), wherever it is: at module level,
under `if TYPE_CHECKING:`, or inside a function. A name imported from a package (`from swerl_cli.policy import
PolicyBackend`) is an edge to that package's `__init__`. The parent packages Python runs before a submodule are not
edges (every package would be a cycle with its own modules).
"""

from __future__ import annotations

from tests.streams.test_layering import PKG, _imports, _modules


def _module_name(path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(("swerl_cli", *parts))


def _graph() -> dict[str, set[str]]:
    """module -> the swerl_cli modules it imports, at module level or in a function."""
    names = {_module_name(p): p for p in _modules()}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        deps = set()
        for mod, _, _ in _imports(path):
            while mod and mod not in names:  # `swerl_cli.sandbox.start_sandbox` is the package swerl_cli.sandbox
                mod = mod.rpartition(".")[0]
            if mod and mod != name:
                deps.add(mod)
        graph[name] = deps
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle in `graph`, or [] when there is none."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert _cycle({"a": {"a2"}, "a2": {"a"}}) == ["a", "a2", "a"]


def test_graph_has_function_level_imports() -> None:
    """The graph sees an import inside a function (open_executor imports executor.ray only when --ray is given)."""
    graph = _graph()
    assert "swerl_cli.executor.ray" in graph["swerl_cli.executor"]
    assert "swerl_cli.executor.nodes" in graph["swerl_cli.executor.ray"]
    assert "swerl_cli.policy" in graph["swerl_cli.policy.hf"]  # `from swerl_cli.policy import PolicyBackend`


def test_no_import_cycle_counting_function_imports() -> None:
    cycle = _cycle(_graph())
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def _under(module: str, *packages: str) -> bool:
    return any(module == f"swerl_cli.{p}" or module.startswith(f"swerl_cli.{p}.") for p in packages)


def test_report_and_evaluation_import_nothing_of_training() -> None:
    """Reading graded records for a report or a table needs no trainer (step_penalty is streams/graded.py's)."""
    bad = sorted(
        f"{src} -> {dst}"
        for src, deps in _graph().items()
        if _under(src, "report", "evaluation")
        for dst in deps
        if _under(dst, "training")
    )
    assert not bad, "\n".join(bad)


EXTENDS = {("swerl_cli.policy.gold_steps", "swerl_cli.policy.gold")}  # GoldStepsPolicy is a GoldPolicy


def test_policy_backends_import_no_other_backend() -> None:
    """A policy backend's module takes shared turn helpers from policy/turns.py, never from another backend (one
    that extends another's class imports it: EXTENDS)."""
    from swerl_cli.policy import BACKENDS

    modules = {spec.split(":")[0] for spec in BACKENDS.values()}
    assert {"swerl_cli.policy.hf", "swerl_cli.policy.openai", "swerl_cli.policy.vllm"} <= modules
    graph = _graph()
    bad = sorted(
        f"{src} -> {dst}"
        for src in modules
        for dst in graph.get(src, ())
        if dst in modules and (src, dst) not in EXTENDS
    )
    assert not bad, "\n".join(bad)


def test_task_field_checks_sit_in_streams() -> None:
    """The record-field checks that sandbox/, grading/ and collect/ share are a streams module, not tasks/'s."""
    graph = _graph()
    users = {src for src, deps in graph.items() if "swerl_cli.streams.task_fields" in deps}
    assert {"swerl_cli.sandbox.build", "swerl_cli.grading.jobs"} <= users
    bad = sorted(
        f"{src} -> {dst}"
        for src, deps in graph.items()
        if _under(src, "sandbox", "streams", "policy", "executor")
        for dst in deps
        if _under(dst, "tasks")
    )
    assert not bad, "\n".join(bad)
