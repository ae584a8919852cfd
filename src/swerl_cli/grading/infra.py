"""What counts as test infrastructure: the files a patch may not change for grading (docs/grading.md).

Every path git sees changed after the model patch applied (patching.py) that configures or extends a test runner is
set aside: restored to base_commit (or removed) before the test_patch is applied, so the tests run with the
repository's own runner setup. By name: test files (`test_*.py`, `*_test.py`, anything under a `test`, `tests` or
`testing` directory, as the SWE-bench split and `swerl tasks mine` define them), `conftest.py`, `pytest.ini`,
`tox.ini`, `noxfile.py`, `sitecustomize.py`, `usercustomize.py`, `.gitattributes`, `.pth` files, `*.dist-info` /
`*.egg-info` contents (entry points load plugins), `__pycache__` / `.pyc` files and `.pytest_cache`; the runners of
the other parsers (`bin/test` and sympy's `runtests.py`; Django's `tests/runtests.py` is a test file). `setup.cfg`
and `pyproject.toml` are set aside when the patch changes one of their runner sections (`[tool:pytest]`,
`[tool.pytest.ini_options]`, tox, ...), and kept otherwise. A pyproject.toml is read as TOML too, as pytest reads
it: quoted or escaped keys, dotted keys and inline tables reach the same `tool.pytest` table, so every spelling of
it is compared (a file that no longer parses counts as changed).
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath

from swerl_cli.sandbox.gitops import patch_files

TEST_DIRS = frozenset({"test", "tests", "testing"})
BY_NAME = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "tox.ini",
        "noxfile.py",
        "sitecustomize.py",
        "usercustomize.py",
        ".gitattributes",  # how the grader's git writes restored files (encoding, eol)
    }
)
RUNNERS = frozenset({"bin/test", "sympy/testing/runtests.py", "sympy/utilities/runtests.py"})
SECTIONED = frozenset({"setup.cfg", "pyproject.toml"})
_RENAME = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$")
_HEADER = re.compile(r"^\s*\[+\s*([^\]]+?)\s*\]+\s*(?:#.*)?$")
_RUNNER_SECTION = re.compile(r"pytest|tox|nose", re.IGNORECASE)
_RUNNER_TABLES = ("pytest", "tox", "nose", "coverage")


def all_paths(patch: str) -> list[str]:
    """Every path a unified diff names by swerl's own reading: new and old sides, rename and copy sources. Not used
    to grade (git decides what a patch changed: patching.py); kept for reading patches elsewhere."""
    files, _ = patch_files(patch)
    out = dict.fromkeys(files)
    for line in patch.splitlines():
        m = _RENAME.match(line)
        if m:
            out[m.group(1)] = None
        elif line.startswith("diff --git a/"):
            out[line[len("diff --git a/") :].split(" b/", 1)[0]] = None
    return [p for p in out if p]


def is_infra(path: str) -> bool:
    """Whether a repository path is test infrastructure by its name alone (pyproject/setup.cfg: see sections)."""
    p = PurePosixPath(path)
    name = p.name
    if path in RUNNERS or name in BY_NAME or name.endswith((".pth", ".pyc", ".pyo")):
        return True
    dirs = p.parts[:-1]
    if any(d in TEST_DIRS or d in ("__pycache__", ".pytest_cache") for d in dirs):
        return True
    if any(d.endswith((".dist-info", ".egg-info")) for d in dirs):
        return True
    return name.startswith("test_") or name.endswith("_test.py")


def runner_sections(text: str, toml: bool = False) -> dict[str, str]:
    """{section name: its lines} for the runner sections of an INI or TOML file (headers naming pytest/tox); with
    `toml` also the runner tables under `tool` as a TOML parser reads them (`toml:tool.pytest`: canonical JSON)."""
    out = _ini_sections(text)
    if toml:
        out.update(_toml_tables(text))
    return out


def _toml_tables(text: str) -> dict[str, str]:
    try:
        import tomllib
    except ImportError:  # Python 3.10: every change of the file counts
        return {"toml:text": text}
    try:
        tool = tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return {"toml:unparsed": text}
    if not isinstance(tool, dict):
        return {"toml:tool": json.dumps(tool, sort_keys=True, default=str)}
    return {
        f"toml:tool.{key}": json.dumps(val, sort_keys=True, default=str)
        for key, val in tool.items()
        if any(name in key.lower() for name in _RUNNER_TABLES)
    }


def _ini_sections(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _HEADER.match(line)
        if m:
            name = re.sub(r"[\s\"']", "", m.group(1))
            current = name if _RUNNER_SECTION.search(name) else None
            if current is not None:
                out.setdefault(current, "")
            continue
        if current is not None and line.strip() and not line.lstrip().startswith(("#", ";")):
            out[current] += line.strip() + "\n"
    return out


def sectioned(paths: list[str]) -> list[str]:
    """The paths whose runner sections must be compared (setup.cfg, pyproject.toml)."""
    return [p for p in paths if PurePosixPath(p).name in SECTIONED]
