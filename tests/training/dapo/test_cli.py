"""`swerl dapo` configuration and guard-rail errors: one stderr line that says the fix, exit 3, no traceback."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from swerl_cli.cli import app
from tests.records import rollout


def _run(args: list[str]):
    return CliRunner().invoke(app, ["dapo", *args])


def _one_line(result) -> str:
    err = result.stderr.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    return err


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "graded.jsonl"
    path.write_text(json.dumps(rollout("A", 0, resolved=True)) + "\n" + json.dumps(rollout("A", 1)) + "\n")
    return path


@pytest.mark.parametrize(
    ("flags", "expect"),
    [
        (["--eps-low", "0.2", "--eps-high", "0.1"], "field 'eps_high': 0.1 < eps_low 0.2"),
        (["--group-size", "1"], "field 'group_size': must be >= 2"),
        (["--std", "unbiased"], "choose one of population, sample"),
        (["--t-max", "5"], "set --t-max to collect's --max-turns"),
    ],
)
def test_dapo_bad_flags_fail_with_one_line_remedy(data, tmp_path, flags, expect):
    result = _run(["--model", "m", "--output", str(tmp_path / "o"), *flags, str(data)])
    assert result.exit_code == 2  # a bad flag value is a usage error (docs/cli.md)
    assert expect in _one_line(result)
    assert result.stdout == ""


def test_dapo_unknown_yaml_key_fails_with_one_line(data, tmp_path):
    cfg = tmp_path / "dapo.yaml"
    cfg.write_text("eps_high: 0.28\nepsilon_high: 0.3\n")
    result = _run(["--model", "m", "--output", str(tmp_path / "o"), "--config", str(cfg), str(data)])
    assert result.exit_code == 3
    line = _one_line(result)
    assert "unknown field 'epsilon_high'" in line
    assert "dapo.yaml" in line


def test_dapo_yaml_eps_high_below_eps_low_names_the_fix(data, tmp_path):
    cfg = tmp_path / "dapo.yaml"
    cfg.write_text("eps_low: 0.3\neps_high: 0.26\n")
    result = _run(["--model", "m", "--output", str(tmp_path / "o"), "-c", str(cfg), str(data)])
    assert result.exit_code == 3
    assert "raise --eps-high or lower --eps-low" in _one_line(result)


def test_dapo_refuses_biased_sampling_naming_file_and_line(tmp_path):
    path = tmp_path / "graded.jsonl"
    recs = [rollout("A", 0, resolved=True), rollout("A", 1, sampling={"temperature": 0.7, "top_p": 0.8})]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    result = _run(["--model", "m", "--output", str(tmp_path / "o"), str(path)])
    assert result.exit_code == 3
    line = _one_line(result)
    assert f"{path}:2: field 'policy.sampling'" in line
    assert "temperature=0.7, top_p=0.8" in line
    assert "--allow-biased-sampling" in line


def test_dapo_refuses_mixed_policy_versions(tmp_path):
    path = tmp_path / "graded.jsonl"
    recs = [rollout("A", 0, resolved=True, version="ckpt-3"), rollout("A", 1, version="ckpt-4")]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    result = _run(["--model", "m", "--output", str(tmp_path / "o"), str(path)])
    assert result.exit_code == 3
    assert f"{path}:2: field 'policy.version': 'ckpt-4' differs from 'ckpt-3'" in _one_line(result)


def test_dapo_requires_model_and_output(data):
    result = _run([str(data)])
    assert result.exit_code == 2  # a missing required flag is a usage error (issue 43)
    assert "--model CKPT_k and --output CKPT_k+1" in _one_line(result)


def test_dapo_refuses_output_equal_to_model(data, tmp_path):
    result = _run(["--model", str(tmp_path), "--output", str(tmp_path), str(data)])
    assert result.exit_code == 3
    assert "write checkpoint k+1 to a new directory" in _one_line(result)
