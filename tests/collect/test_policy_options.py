"""collect's policy options belong to the backends: each flag's default and help are read from the backends' own
`Options` (declared there once), and a config file may give them as one section, `policy: {name: vllm,
tensor_parallel_size: 2}`, beside the flat keys that still work."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from swerl_cli.collect import CollectConfig
from swerl_cli.core.config import FLAG, resolve_config
from swerl_cli.core.errors import ConfigError
from swerl_cli.policy import BACKENDS, BUILTIN, OPTION
from tests.conftest import ROOT, run_swerl

FIELDS = {f.name: f for f in dataclasses.fields(CollectConfig)}
# Options a backend reads from collect's own settings (the engine is sized by them): collect owns their defaults.
COLLECT_OWN = {"concurrency", "max_context_tokens"}


def _options() -> list[tuple[str, dataclasses.Field]]:
    return [(n, f) for n in BUILTIN for f in dataclasses.fields(BACKENDS.cls(n).Options)]


def test_every_policy_flag_default_is_the_backends_own():
    """No default written twice: every built-in backend's option that is a collect setting has the collect field's
    default, and the field is the backends' (its default and help read from them, not written in collect)."""
    for name, option in _options():
        assert option.name in FIELDS, f"{name}: option {option.name} is no collect setting"
        field = FIELDS[option.name]
        if option.name in COLLECT_OWN:
            assert OPTION not in field.metadata
            continue
        assert field.metadata.get(OPTION), f"collect's {option.name} is declared in collect, not read from the backend"
        assert field.default == option.default, f"{name}.{option.name}: {option.default!r} != {field.default!r}"
        if FLAG in option.metadata:  # the help, declared once: the very same object
            assert field.metadata[FLAG] is option.metadata[FLAG], f"{name}.{option.name}: help written twice"
    policy_fields = {n for n, f in FIELDS.items() if f.metadata.get(OPTION)}
    assert policy_fields == {o.name for _, o in _options()} - COLLECT_OWN


def test_every_policy_flag_has_help_from_a_backend():
    for name, field in FIELDS.items():
        if field.metadata.get(OPTION) and name not in ("api_key", "vllm_engine_args", "vllm_extras", "backoff_s"):
            assert field.metadata[FLAG].help, name  # a flag, its help from the backend that declares it


def _yaml(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "collect.yaml"
    p.write_text(text)
    return p


def test_a_policy_section_is_the_flat_keys_it_stands_for(tmp_path):
    section = resolve_config(CollectConfig, _yaml(tmp_path, "policy: {name: vllm, tensor_parallel_size: 2}\n"))
    flat = resolve_config(CollectConfig, _yaml(tmp_path, "policy: vllm\ntensor_parallel_size: 2\n"))
    assert section == flat
    assert (section.policy, section.tensor_parallel_size, section.gpu_memory_utilization) == ("vllm", 2, 0.9)
    spelled = "policy:\n  name: openai\n  base-url: [http://a/v1]\n  max_retries: 2\nsamples: 3\n"
    cfg = resolve_config(CollectConfig, _yaml(tmp_path, spelled), max_retries=7)  # a flag wins over the file
    assert (cfg.policy, cfg.base_url, cfg.max_retries, cfg.samples) == ("openai", ("http://a/v1",), 7, 3)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("policy: {name: vllm, no_such: 1}\n", "the vllm policy: unknown option 'no_such' (its options: model,"),
        ("policy: {name: gold, base_url: [http://a/v1]}\n", "the gold policy: unknown option 'base_url'"),
        ("policy: {tensor_parallel_size: 2}\n", "a section names its backend with 'name' (one of openai, hf,"),
        ("policy: {name: gpt}\n", "unknown policy 'gpt'; choose one of openai, hf, vllm"),
        ("policy: {name: vllm, dtype: auto}\ndtype: float32\n", "'dtype' is given twice"),
        ("policy: {name: vllm, tensor_parallel_size: two}\n", "field 'tensor_parallel_size': expected int, got 'two'"),
    ],
)
def test_a_bad_policy_section_is_one_line_naming_the_file(tmp_path, text, needle):
    with pytest.raises(ConfigError) as info:
        resolve_config(CollectConfig, _yaml(tmp_path, text))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(tmp_path / "collect.yaml"))
    assert needle in message


def test_a_bad_policy_section_stops_collect_with_exit_3_before_reading_tasks(tmp_path):
    cfg = _yaml(tmp_path, "policy: {name: vllm, no_such: 1}\n")
    res = run_swerl("collect", str(tmp_path / "no-tasks.jsonl"), "-c", str(cfg))
    assert res.returncode == 3, res.stderr
    assert res.stdout == b""
    assert res.stderr.decode().count("\n") == 1
    assert "unknown option 'no_such'" in res.stderr.decode()


@pytest.mark.parametrize("path", sorted((ROOT / "examples").rglob("collect*.yaml")), ids=lambda p: p.name)
def test_the_example_collect_configs_still_load(path):
    cfg = resolve_config(CollectConfig, path)
    assert cfg.policy in BACKENDS
