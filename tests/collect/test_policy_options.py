"""collect's policy options belong to the backends: each flag's default and help are read from the backends' own
`Options` (declared there once), a config file may give them as one section, `policy: {name: vllm,
tensor_parallel_size: 2}`, beside the flat keys that still work, and the config holds them as a name and that
backend's `Options` (`cfg.policy`, `cfg.policy_options`), with no flat copy."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

from swerl_cli.collect import CollectConfig
from swerl_cli.core.config import FLAG, init_fields, resolve_config
from swerl_cli.core.errors import ConfigError
from swerl_cli.policy import BACKENDS, BUILTIN, OPTION
from swerl_cli.policy.gold import GoldOptions
from swerl_cli.policy.openai import OpenAIOptions
from swerl_cli.policy.vllm import VLLMOptions
from tests.conftest import ROOT, run_swerl

FIELDS = {f.name: f for f in init_fields(CollectConfig)}  # the constructor's: fields and InitVars
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
    options = section.policy_options
    assert (section.policy, options.tensor_parallel_size, options.gpu_memory_utilization) == ("vllm", 2, 0.9)
    spelled = "policy:\n  name: openai\n  base-url: [http://a/v1]\n  max_retries: 2\nsamples: 3\n"
    cfg = resolve_config(CollectConfig, _yaml(tmp_path, spelled), max_retries=7)  # a flag wins over the file
    options = cfg.policy_options
    assert (cfg.policy, options.base_url, options.max_retries, cfg.samples) == ("openai", ("http://a/v1",), 7, 3)


def test_the_config_holds_a_name_and_the_backends_options():
    """The flat policy options fill the named backend's `Options`; the config keeps no copy of them, and one its
    backend lacks is left out."""
    cfg = CollectConfig(policy="vllm", model="/ckpt", tensor_parallel_size=2, base_url=("http://a/v1",), concurrency=3)
    assert cfg.policy_options == VLLMOptions(model="/ckpt", tensor_parallel_size=2, concurrency=3)
    policy_fields = {n for n, f in FIELDS.items() if f.metadata.get(OPTION)}
    assert policy_fields
    assert not any(hasattr(cfg, name) for name in policy_fields)
    assert {f.name for f in dataclasses.fields(cfg)}.isdisjoint(policy_fields)
    assert CollectConfig(policy="gold", model="/ckpt", max_retries=9).policy_options == GoldOptions()
    openai = CollectConfig(base_url=("http://a/v1",), max_retries=0).policy_options
    assert isinstance(openai, OpenAIOptions)
    assert (openai.base_url, openai.max_retries) == (("http://a/v1",), 0)


def test_the_section_travels_with_the_config():
    """`collect --ray` pickles the config to its workers: the section comes back whole."""
    cfg = CollectConfig(base_url=("http://a/v1", "http://b/v1"), request_timeout_s=5.0, samples=2)
    back = pickle.loads(pickle.dumps(cfg))
    assert back == cfg
    assert back.policy_options.request_timeout_s == 5.0
    assert back.policy_options.base_url == cfg.policy_options.base_url


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"tensor_parallel_size": 0}, "field 'tensor_parallel_size': must be >= 1"),
        ({"dtype": "fp8"}, "field 'dtype': choose one of"),
        ({"request_timeout_s": 0.0}, "field 'request_timeout_s'"),
        ({"gpu_memory_utilization": 1.5}, "field 'gpu_memory_utilization'"),
        ({"base_url": ("ftp://a",)}, "field .base_url.: .ftp://a. is not an http"),
    ],
)
def test_a_bad_policy_option_is_refused_whichever_backend_is_named(options, needle):
    with pytest.raises(ConfigError, match=needle):
        CollectConfig(policy="gold", **options)


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


def test_the_replay_file_is_an_input_that_collect_will_not_overwrite(tmp_path):
    """The section says which files its backend reads (`input_files`), so `-o` may not be one of them."""
    assert CollectConfig(policy="replay", replay="r.jsonl").policy_options.input_files() == ("r.jsonl",)
    assert CollectConfig(policy="gold", replay="r.jsonl").policy_options.input_files() == ()
    (tmp_path / "t.jsonl").write_text("{}\n")
    (tmp_path / "r.jsonl").write_text("{}\n")
    res = run_swerl("collect", "t.jsonl", "--policy", "replay", "--replay", "r.jsonl", "-o", "r.jsonl", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "-o r.jsonl is also an input (r.jsonl)" in res.stderr.decode()
    assert (tmp_path / "r.jsonl").read_text() == "{}\n"
