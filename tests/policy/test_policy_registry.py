"""Policies are found by name in one registry and read their own typed options from collect's flags; a backend
registered from a test module (tests/policy/plugin_policy.py) collects like a built-in one."""

from __future__ import annotations

import uuid

import pytest

from swerl_cli.collect import CollectConfig, build_policy, plan_jobs, run_jobs
from swerl_cli.collect.policy import check_distributable, episode_policy
from swerl_cli.core.errors import ConfigError
from swerl_cli.policy import BACKENDS, create, register_policy
from swerl_cli.policy.openai import OpenAIOptions, OpenAIPolicy
from swerl_cli.policy.replay import ReplayOptions
from swerl_cli.streams.jsonl import read_records
from tests.conftest import EXAMPLES
from tests.policy.plugin_policy import ScriptedPolicy

register_policy("scripted", "tests.policy.plugin_policy:ScriptedPolicy")  # the "where to add" proof


def test_options_read_their_own_flags_by_name_and_keep_defaults_for_none():
    opts = OpenAIOptions.from_options(model="m", base_url=("http://a/v1",), max_retries=None, sandbox="docker")
    assert opts == OpenAIOptions(model="m", base_url=("http://a/v1",))  # None and foreign flags ignored
    assert ReplayOptions.from_options(replay="t.jsonl", model="x") == ReplayOptions(replay="t.jsonl")
    with pytest.raises(AttributeError):
        opts.model = "other"  # type: ignore[misc]  # frozen


def test_collect_builds_each_backend_from_its_own_options():
    cfg = CollectConfig(
        policy="openai", model="served", base_url=("http://a/v1", "http://b/v1"), max_retries=2, policy_version="v3"
    )
    policy = build_policy(cfg)
    assert isinstance(policy, OpenAIPolicy)
    assert (policy.model, policy.base_urls, policy.endpoints.max_retries, policy.version) == (
        "served",
        ["http://a/v1", "http://b/v1"],
        2,
        "v3",
    )
    with pytest.raises(ConfigError, match="needs --replay FILE"):
        build_policy(CollectConfig(policy="replay"))
    with pytest.raises(ConfigError, match=r"unknown policy 'gpt'; choose one of openai, hf, vllm, gold, ") as info:
        create("gpt")
    assert str(info.value).endswith(", ".join(BACKENDS))


def test_hf_and_vllm_check_a_local_model_directory_before_anything(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    for name in ("hf", "vllm"):
        with pytest.raises(ConfigError, match=r"not a usable model directory: no weights"):
            build_policy(CollectConfig(policy=name, model=str(tmp_path)))


def test_cluster_mode_is_the_backends_own():
    assert check_distributable(CollectConfig(policy="gold")) == "ship"
    assert check_distributable(CollectConfig(policy="openai", base_url=("http://a/v1",))) == "rebuild"
    assert check_distributable(CollectConfig(policy="scripted")) == "ship"
    for name in ("hf", "vllm"):
        with pytest.raises(ConfigError, match=f"--policy {name} runs the model inside this process"):
            check_distributable(CollectConfig(policy=name))
    # A worker's own openai policy starts its round robin at an endpoint chosen by the episode.
    urls = tuple(f"http://h{i}/v1" for i in range(4))
    starts = {episode_policy(CollectConfig(base_url=urls), "t", s).endpoints._next for s in range(16)}  # type: ignore[attr-defined]
    assert len(starts) > 1


@pytest.mark.docker
def test_a_backend_registered_from_a_test_module_collects(tmp_path):
    assert BACKENDS["scripted"] == "tests.policy.plugin_policy:ScriptedPolicy"
    cfg = CollectConfig(
        policy="scripted", model="echo scripted-was-here", policy_version="v9", run=f"pt-{uuid.uuid4().hex[:8]}"
    )
    policy = build_policy(cfg)
    assert isinstance(policy, ScriptedPolicy)
    records: list[dict] = []
    tasks = list(read_records(str(EXAMPLES / "tasks.jsonl")))[:1]
    assert run_jobs(plan_jobs(tasks, cfg, set()), cfg, records.append, policy=policy) == 1
    (rec,) = records
    assert (rec["policy"]["backend"], rec["policy"]["version"]) == ("scripted", "v9")
    assert rec["exit_status"] == "submitted", rec.get("error")
    assert "scripted-was-here" in rec["messages"][3]["content"]
