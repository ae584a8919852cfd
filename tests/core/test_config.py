from __future__ import annotations

from dataclasses import dataclass

import pytest

from swerl_cli.core.config import config_to_dict, resolve_config
from swerl_cli.core.errors import ConfigError, UsageError


@dataclass(frozen=True, slots=True)
class _Cfg:
    lr: float = 1e-6
    group_size: int = 10
    name: str = "x"
    tags: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise ConfigError(f"field 'group_size': must be >= 2 to compute group advantages; got {self.group_size}")


def test_resolve_config_flags_override_yaml(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("lr: 3\ngroup-size: 4\ntags: [a, b]\n")
    cfg = resolve_config(_Cfg, p, group_size=8, name=None)
    assert cfg == _Cfg(lr=3.0, group_size=8, name="x", tags=("a", "b"))
    assert isinstance(cfg.lr, float)
    assert config_to_dict(cfg)["tags"] == ["a", "b"]


def test_exponent_without_a_dot_is_a_number(tmp_path):
    """PyYAML (YAML 1.1) reads `1e-4` as a string, so `lr: 1e-4` was refused as 'expected a number'."""
    p = tmp_path / "c.yaml"
    p.write_text("lr: 1e-4\nname: '2e3'\n")
    assert resolve_config(_Cfg, p) == _Cfg(lr=1e-4, name="2e3")  # a quoted one stays a string
    p.write_text("lr: 5E3\n")
    assert resolve_config(_Cfg, p).lr == 5000.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("group_sise: 4\n", r"c.yaml: unknown field 'group_sise'.*group_size"),  # the nearest field is suggested
        ("group_size: '4'\n", r"c.yaml: field 'group_size': expected int"),
        ("a: 1\nb: [\n", r"c.yaml:\d+: not valid YAML"),  # the syntax error's line
    ],
)
def test_resolve_config_rejects_a_bad_file_naming_it(tmp_path, text: str, message: str):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=message):
        resolve_config(_Cfg, p)


def test_resolve_config_runs_validation_with_remedy(tmp_path):
    with pytest.raises(UsageError, match="bad flag value: .*must be >= 2"):  # a flag: usage error, exit 2
        resolve_config(_Cfg, None, group_size=1)
    p = tmp_path / "c.yaml"
    p.write_text("group_size: 1\n")
    with pytest.raises(ConfigError, match=r"c.yaml: .*must be >= 2") as info:  # the file's value: exit 3
        resolve_config(_Cfg, p)
    assert info.value.exit_code == 3


def test_collect_config_takes_vllm_engine_args_as_a_mapping_only(tmp_path):
    from swerl_cli.collect import CollectConfig
    from swerl_cli.policy.vllm import VLLMOptions, VLLMPolicy

    p = tmp_path / "stage2.yaml"
    p.write_text(
        "policy: vllm\nmodel: /ckpt\ntensor_parallel_size: 8\nvllm_engine_args:\n  max_model_len: 131072\n"
        "  hf_overrides: {rope_scaling: {rope_type: yarn, factor: 4.0}}\n"
    )
    cfg = resolve_config(CollectConfig, p, gpu_memory_utilization=0.8)
    # the backend's own options, built from collect's flags (build_policy would first check /ckpt as a model dir)
    options = cfg.policy_options
    assert isinstance(options, VLLMOptions)
    assert VLLMPolicy.engine_args(options) == {
        "tensor_parallel_size": 8,
        "gpu_memory_utilization": 0.8,
        "dtype": "float32",  # the trainer's on a CPU-only machine (no CUDA here)
        "max_model_len": 131072,
        "hf_overrides": {"rope_scaling": {"rope_type": "yarn", "factor": 4.0}},
        "enable_chunked_prefill": False,  # CPU: whole prefills, the batch budget holding YAML's context
        "max_num_batched_tokens": 131072,
    }
    p.write_text("vllm_engine_args: max_model_len=131072\n")
    with pytest.raises(ConfigError, match=r"stage2.yaml: field 'vllm_engine_args': expected dict"):
        resolve_config(CollectConfig, p)
