"""The corrections through `swerl dapo` on a tiny model: each writes its metrics on every step's line, and the
default (`--loss dapo`, or no flag) gives the same update as before the registry."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.conftest import run_swerl
from tests.records import rollout

pytestmark = [pytest.mark.train, pytest.mark.slow]

# one group of 8 in steps of 4 samples: the sample fill (a whole group of 8 would be one step)
COMMON = ("--batch-size", "4", "--lr", "1e-2", "--weight-decay", "0.0", "--micro-batch-tokens", "64", "--seed", "3",
          "--step-fill", "samples")  # fmt: skip
FIELDS = {
    "tis": ("is_ratio_mean", "is_ratio_max", "is_ratio_min", "is_capped_frac"),
    "mis": ("is_ratio_mean", "is_ratio_max", "is_ratio_min", "is_masked_frac"),
    "ipo": ("prob_diff_mean", "prob_diff_max", "ipo_masked_frac"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(7)

    def ids(n: int) -> list[int]:
        return [rng.randrange(5, 1500) for _ in range(n)]

    recs = []
    for i in range(8):
        toks = [ids(3 + i % 3), ids(4)]
        # sampler logprobs far from the random model's (about -log(vocab)): the corrections have work to do
        lps = [[-rng.uniform(2.0, 9.0) for _ in t] for t in toks]
        recs.append(rollout("A", i, resolved=i % 2 == 0, turns=2, prompt=ids(9), token_ids=toks, logprobs=lps))
    path = tmp_path_factory.mktemp("corr") / "graded.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def _dapo(graded: Path, out: Path, *extra: str) -> tuple[dict, list[dict]]:
    proc = run_swerl("dapo", str(graded), "--model", str(_dapo.model), "--output", str(out), *COMMON, *extra)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    summary = json.loads(proc.stdout)
    return summary, [json.loads(x) for x in Path(summary["metrics_file"]).read_text().splitlines()]


@pytest.mark.parametrize("kind", ["tis", "mis", "ipo"])
def test_each_correction_reports_its_metrics_every_step(tiny_model, graded, tmp_path, kind):
    _dapo.model = tiny_model
    summary, lines = _dapo(graded, tmp_path / kind, "--loss", kind, "--is-cap", "1.5", "--ipo-eps", "0.001")
    assert summary["config"]["loss"] == kind
    assert len(lines) == 2
    for line in lines:
        for f in FIELDS[kind]:
            assert isinstance(line[f], float), (f, line)
        assert line["logprob_diff"] > 0.1  # the sampler-trainer gap of the step
    hit = {"tis": "is_capped_frac", "mis": "is_masked_frac", "ipo": "ipo_masked_frac"}[kind]
    assert 0 < lines[0][hit] <= 1


def test_explicit_dapo_loss_equals_the_default(tiny_model, graded, tmp_path):
    _dapo.model = tiny_model
    _, default = _dapo(graded, tmp_path / "default")
    _, named = _dapo(graded, tmp_path / "named", "--loss", "dapo")
    for a, b in zip(default, named, strict=True):
        assert a["loss"] == b["loss"]
        assert a["grad_norm"] == b["grad_norm"]
        assert "is_ratio_mean" not in a
