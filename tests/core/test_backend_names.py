"""Nothing outside a backend's package names a backend: sandboxes and policies are found by name in their
registries, and code elsewhere asks the backend class (uses_images, isolated, distributed) instead of comparing
names. A string constant equal to a registered name outside its package is such a comparison or default."""

from __future__ import annotations

import ast
from pathlib import Path

from swerl_cli import policy, sandbox
from swerl_cli.sandbox import DEFAULT_BACKEND, backend_class, one_of

SRC = Path(__file__).resolve().parents[2] / "src" / "swerl_cli"
# The same words meaning something else: validate's gold patch run, the vllm package's install line and config table,
# collect's `--replay FILE` option.
NOT_A_BACKEND = {
    ("grading/validate.py", "gold"),
    ("core/errors.py", "vllm"),
    ("core/model_dir.py", "vllm"),
    ("collect/config.py", "replay"),
}


def _named(package: str, names: set[str]) -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(f"{package}/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names and (rel, node.value) not in NOT_A_BACKEND:
                found.append(f"{rel}:{node.lineno} {node.value!r}")
    return found


def test_no_module_outside_sandbox_names_a_sandbox_backend() -> None:
    assert _named("sandbox", set(sandbox.BACKENDS)) == []


def test_no_module_outside_policy_names_a_policy_backend() -> None:
    assert _named("policy", set(policy.BACKENDS)) == []


def test_backends_say_what_callers_ask_instead_of_names() -> None:
    assert DEFAULT_BACKEND in sandbox.BACKENDS
    assert policy.DEFAULT_POLICY in policy.BACKENDS
    # grading kills every leftover process after the tests only where the sandbox's processes are its own
    # (tests/sandbox/test_contract.py registers a plugin backend at collection: only the built-in ones are fixed)
    built_in = [n for n in sandbox.BACKENDS if not sandbox.BACKENDS[n].startswith("tests.")]
    assert built_in == ["docker", "podman", "local"]
    assert [n for n in built_in if backend_class(n).isolated] == ["docker", "podman"]
    assert one_of(built_in) == "docker, podman or local"
    assert one_of(["docker", "podman"]) == "docker or podman"
