"""Down-weighting stale groups (`dapo --follow --stale-decay D`): the follower writes `staleness_weight` = D**age on
each record of a kept group; `swerl dapo` scales that sample's advantage by it, so every token term of the loss
scales by it (the loss is linear in the advantage)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from swerl_cli.streams.records import Located
from swerl_cli.training.follow import weighted
from tests.conftest import run_swerl
from tests.records import rollout

COMMON = ("--batch-size", "4", "--lr", "1e-2", "--micro-batch-tokens", "64", "--seed", "3")


def _graded(path: Path, weight: object | None) -> Path:
    rng = random.Random(7)

    def ids(n: int) -> list[int]:
        return [rng.randrange(5, 1500) for _ in range(n)]

    recs = [
        rollout("A", i, resolved=i % 2 == 0, turns=2, prompt=ids(9), token_ids=[ids(3 + i), ids(4)]) for i in range(4)
    ]
    if weight is not None:
        for r in recs:
            r["staleness_weight"] = weight
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_the_follower_weights_each_group_by_decay_to_its_staleness():
    groups = [([Located("s", i, rollout(f"T{a}", i)) for i in range(2)], a) for a in (0, 1, 2)]
    assert all("staleness_weight" not in r for r in weighted(groups, 1.0))  # D = 1: records unchanged
    got = [(r["instance_id"], r["staleness_weight"]) for r in weighted(groups, 0.5)]
    assert got == [("T0", 1.0), ("T0", 1.0), ("T1", 0.5), ("T1", 0.5), ("T2", 0.25), ("T2", 0.25)]
    assert "staleness_weight" not in groups[1][0][0].obj  # the stream's records are not modified


@pytest.mark.train
@pytest.mark.slow
def test_a_weighted_group_scales_the_update_loss_and_a_bad_weight_is_one_line(tiny_model, tmp_path):
    def first_step(weight: object | None) -> dict:
        data = _graded(tmp_path / f"g-{weight}.jsonl", weight)
        proc = run_swerl(
            "dapo", str(data), "--model", str(tiny_model), "--output", str(tmp_path / f"o-{weight}"), *COMMON
        )
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        return json.loads(Path(json.loads(proc.stdout)["metrics_file"]).read_text().splitlines()[0])

    plain, half = first_step(None), first_step(0.5)
    assert plain["loss"] != 0.0
    assert half["loss"] == pytest.approx(0.5 * plain["loss"], rel=1e-5)  # step 0: ratio 1, the loss is w * A terms
    assert half["adv_mean"] == pytest.approx(0.5 * plain["adv_mean"], rel=1e-9)
    bad = run_swerl("dapo", str(_graded(tmp_path / "bad.jsonl", 2)), "--model", str(tiny_model), "--output",
                    str(tmp_path / "o-bad"), *COMMON)  # fmt: skip
    err = bad.stderr.decode().strip().splitlines()
    assert bad.returncode == 3, err
    assert len(err) == 1
    assert err[0].endswith("bad.jsonl:1: field 'staleness_weight': must be a number in (0, 1], got 2")
    assert "Traceback" not in bad.stderr.decode()
