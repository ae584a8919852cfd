"""The contract suites are parametrized over the registries themselves: backends registered before collection (here
by `-p tests.plugin_registrations`, as a plugin package's import would) are tested by the unedited suites."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT

SUITES = (
    "tests/policy/test_policy_contract.py",
    "tests/tasks/test_importer_contract.py",
    "tests/convert/test_converter_contract.py",
)


def test_registered_out_of_tree_backends_pass_the_unedited_contract_suites():
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.plugin_registrations", "-p", "no:xdist", "-p", "no:cacheprovider",
         "-q", "-rA", "-k", "scripted or toy", *SUITES],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    passed = re.findall(r"^PASSED \S+\[(scripted|toy-bench|toy-agent)\]$", proc.stdout, re.M)
    assert {p for p in passed} == {"scripted", "toy-bench", "toy-agent"}, proc.stdout[-3000:]
    assert len(passed) == 4 + 4 + 4  # every parametrized contract test, once per plugin
