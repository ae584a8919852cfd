"""The tests' out-of-tree backends, registered at import: `pytest -p tests.plugin_registrations SUITE` runs a seam's
contract suite over them too, with no edit to the suite (tests/test_plugin_contracts.py runs it so)."""

from swerl_cli.convert import register_converter
from swerl_cli.policy import register_policy
from swerl_cli.tasks.importers import register_importer

register_policy("scripted", "tests.policy.plugin_policy:ScriptedPolicy")
register_importer("toy-bench", "tests.tasks.plugin_importer:ToyImporter")
register_converter("toy-agent", "tests.convert.plugin_converter:ToyAgent")
