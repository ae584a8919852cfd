"""Layering rules (docs/architecture.md), checked on the source with `ast` (every import, inside functions too), plus
what `import swerl_cli.cli` loads. Import cycles: test_import_cycles.py."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "src" / "swerl_cli"

# errors <- records <- jsonl/config <- sandbox, policy <- agent, grading, filtering <- training, evaluation <- cli
LAYERS = {  # a package's layer, or a module's where its package spans layers (the longest key wins)
    "__init__": 0,
    "core/__init__": 0,
    "core/errors": 0,
    "streams/__init__": 1,
    "streams/stdio": 1,
    "streams/records": 1,
    "streams/values": 1,
    "streams": 2,
    "core": 2,
    "filtering/__init__": 2,
    "filtering/expr": 2,
    "filtering/parse": 2,
    "tasks/__init__": 2,
    "tasks/specs": 2,
    "executor": 3,
    "sandbox": 3,
    "policy": 3,
    "agent": 4,
    "grading": 4,
    "filtering": 4,
    "collect": 4,
    "tasks/importers": 4,
    "tasks/pull": 4,
    "convert": 4,
    "tasks/mining": 5,
    "tasks/synth": 5,
    "training": 5,
    "evaluation": 5,
    "report": 5,
    "cli": 6,
    "__main__": 7,
}
HEAVY = {"torch", "transformers", "deepspeed", "vllm", "trl", "accelerate"}
HEAVY_ALLOWED = (
    "training/",
    "core/model_dir.py",
    "policy/hf.py",
    "policy/vllm.py",
    "policy/engine_size.py",
    "policy/gap.py",
    "policy/checks.py",  # require_device: torch inside the function, when the hf policy is built
)
EXEMPT = ("agent/tools_bin/",)  # scripts copied into sandboxes, never imported by the package


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if not str(p.relative_to(PKG)).startswith(EXEMPT))


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(absolute module name, line, at module level) for every import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(PKG).with_suffix("")
    package = ["swerl_cli", *rel.parts[:-1]] if rel.name != "__init__" else ["swerl_cli", *rel.parts[:-1]]
    top_level = {id(n) for n in tree.body}
    for node in tree.body:  # imports under `if TYPE_CHECKING:` / try at module level still count as top level
        if isinstance(node, (ast.If, ast.Try)):
            top_level |= {id(n) for n in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno, id(node) in top_level) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            found.append((mod, node.lineno, id(node) in top_level))
            if mod.startswith("swerl_cli"):  # `from swerl_cli.streams import records` may name a module
                found += [(f"{mod}.{a.name}", node.lineno, id(node) in top_level) for a in node.names]
    return found


def _layer(rel: str) -> int | None:
    """The layer of a path relative to the package (`streams/records.py`) or a dotted name below it."""
    parts = rel.removesuffix(".py").replace(".", "/").split("/")
    for n in range(len(parts), 0, -1):
        if "/".join(parts[:n]) in LAYERS:
            return LAYERS["/".join(parts[:n])]
    return None


def test_every_module_has_a_layer() -> None:
    unknown = sorted({str(p.relative_to(PKG)) for p in _modules() if _layer(str(p.relative_to(PKG))) is None})
    assert not unknown, f"add these modules to LAYERS in {Path(__file__).name}: {unknown}"


def test_no_upward_or_forbidden_imports() -> None:
    problems = []
    for path in _modules():
        rel = str(path.relative_to(PKG))
        own = _layer(rel)
        for mod, line, top in _imports(path):
            root = mod.split(".")[0]
            where = f"{rel}:{line}: {mod}"
            if root == "swerl_cli" and "." in mod:
                target = _layer(mod.split(".", 1)[1])
                if own is not None and target is not None and target > own:
                    problems.append(f"{where} (layer {own} imports layer {target})")
            elif root in ("typer", "rich", "click") and not rel.startswith("cli/"):
                problems.append(f"{where} (typer/rich only in cli/)")
            elif root == "docker" and not rel.startswith("sandbox/"):
                problems.append(f"{where} (docker only in sandbox/)")
            elif root == "ray" and rel != "executor/ray.py":
                problems.append(f"{where} (ray only in executor/ray.py)")
            elif root in HEAVY:
                if not rel.startswith(HEAVY_ALLOWED):
                    problems.append(f"{where} (torch & co only in HEAVY_ALLOWED)")
                elif top:
                    problems.append(f"{where} (import it inside the function that needs it)")
    assert not problems, "\n".join(problems)


def test_import_cli_loads_neither_torch_nor_docker() -> None:
    code = (
        "import sys, swerl_cli.cli\n"
        "swerl_cli.cli.app\n"  # the whole app: every command module imported
        "bad = sorted(m for m in ('torch', 'docker', 'transformers', 'deepspeed', 'matplotlib') if m in sys.modules)\n"
        "print(','.join(bad))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == ""
