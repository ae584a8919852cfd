"""The DAPO update end to end through `swerl dapo`: ZeRO-3 on 2 processes equals 1 process, dropped groups change
nothing, the checkpoint moves, and AdamW state is carried into the next iteration."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.records import rollout
from tests.training.fixtures import launch_swerl
from tests.training.tb import read_scalars

pytestmark = [pytest.mark.train, pytest.mark.slow]

COMMON = ("--batch-size", "4", "--lr", "1e-2", "--weight-decay", "0.0", "--micro-batch-tokens", "64", "--seed", "3")


def _records(with_dropped_group: bool) -> list[dict]:
    """Two mixed groups (kept: 8 samples -> 2 steps) and optionally an all-equal group (dropped by construction)."""
    rng = random.Random(7)

    def ids(n: int) -> list[int]:
        return [rng.randrange(5, 1500) for _ in range(n)]

    a = [rollout("A", i, resolved=i % 2 == 0, turns=2, prompt=ids(9), token_ids=[ids(3 + i), ids(4)]) for i in range(4)]
    # all unresolved: only the step penalty separates them
    b = [rollout("B", i, turns=t, prompt=ids(7), token_ids=[ids(2 + i)] * t) for i, t in enumerate((12, 20, 5, 30))]
    c = [rollout("C", i, resolved=True, turns=1, prompt=ids(6), token_ids=[ids(5)]) for i in range(4)]
    return a + (c if with_dropped_group else []) + b  # same kept samples in the same order either way


def _dapo(data: Path, model: Path, out: Path, nproc: int, *extra: str) -> dict:
    args = ["dapo", str(data), "--model", str(model), "--output", str(out), "--zero-stage", "3", *COMMON, *extra]
    proc = launch_swerl(args, nproc)
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 1, proc.stdout.decode()[-2000:]
    return json.loads(lines[0])


def _weights(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


@pytest.fixture(scope="module")
def updates(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("dapo-update")
    full, kept = tmp / "full.jsonl", tmp / "kept.jsonl"
    full.write_text("".join(json.dumps(r) + "\n" for r in _records(True)))
    kept.write_text("".join(json.dumps(r) + "\n" for r in _records(False)))
    one = _dapo(full, tiny_model, tmp / "one", 1, "--tensorboard", str(tmp / "tb"))
    two = _dapo(kept, tiny_model, tmp / "two", 2)
    return {"one": one, "two": two, "dir": tmp}


def test_zero3_two_processes_equal_one_process_and_dropped_group_changes_nothing(updates, tiny_model):
    import torch

    one, two = updates["one"], updates["two"]
    assert one["counts"]["groups_dropped"] == 1
    assert one["counts"]["samples_kept"] == two["counts"]["samples_kept"] == 8
    assert one["steps"] == two["steps"] == 2
    w1, w2, w0 = _weights(Path(one["checkpoint"])), _weights(Path(two["checkpoint"])), _weights(tiny_model)
    assert w1.keys() == w2.keys()
    # Equal up to float noise: the two ranks sum gradients in another order, and Adam divides each step by
    # sqrt(v), so where two steps' gradients nearly cancel an ulp of difference shows at ~1e-4 of the step (1.2e-6
    # on one weight of 4,096 with the fused kernel). A dropped group that trained would move weights by ~1e-2.
    for name in w1:
        torch.testing.assert_close(w1[name], w2[name], rtol=1e-5, atol=1e-5, msg=name)
    assert any(not torch.equal(w1[n], w0[n]) for n in w1), "the update did not change the weights"
    m1 = [json.loads(x) for x in Path(one["metrics_file"]).read_text().splitlines()]
    m2 = [json.loads(x) for x in Path(two["metrics_file"]).read_text().splitlines()]
    for a, b in zip(m1, m2, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-5)
        assert a["tokens"] == b["tokens"]
        assert a["ratio_mean"] == pytest.approx(b["ratio_mean"], abs=1e-5)


def test_update_summary_reports_on_policy_first_step_and_clipping(updates):
    one = updates["one"]
    m = [json.loads(x) for x in Path(one["metrics_file"]).read_text().splitlines()]
    assert m[0]["ratio_mean"] == pytest.approx(1.0, abs=1e-6)  # theta_old recomputed: step 1 is exactly on-policy
    assert m[0]["clip_frac_low"] == m[0]["clip_frac_high"] == 0.0
    assert m[1]["ratio_mean"] != pytest.approx(1.0, abs=1e-6)  # step 2 sees the policy step 1 made
    assert one["kind"] == "dapo"
    assert one["tokens"] == sum(x["tokens"] for x in m)
    assert one["resolved_rate"] == pytest.approx(6 / 12)
    assert one["advantage"]["positive"] > 0
    assert one["config"]["dapo"]["optimizer_state_carried"] is False
    assert (Path(one["checkpoint"]) / "optimizer_state" / "latest").is_file()


def test_next_iteration_carries_optimizer_state(updates):
    one = updates["one"]
    tb = updates["dir"] / "tb"
    nxt = _dapo(
        updates["dir"] / "full.jsonl", Path(one["checkpoint"]), updates["dir"] / "next", 1, "--tensorboard", str(tb)
    )
    assert nxt["config"]["dapo"]["optimizer_state_carried"] is True
    assert nxt["steps"] == 2
    # TensorBoard: both updates in one log dir, step metrics under their metrics.jsonl names, steps global over the run
    rows = [json.loads(x) for f in (one, nxt) for x in Path(f["metrics_file"]).read_text().splitlines()]
    events = read_scalars(tb)
    names = {k for r in rows for k, v in r.items() if k != "step" and isinstance(v, (int, float))}
    assert names <= set(events)
    assert [s for s, _ in events["loss"]] == [1, 2, 3, 4]
    assert [v for _, v in events["clip_frac_high"]] == pytest.approx([r["clip_frac_high"] for r in rows], abs=1e-6)
    assert [v for _, v in events["grad_norm"]] == pytest.approx([r["grad_norm"] for r in rows], rel=1e-5)
    assert events["update/resolved_rate"] == [(2, pytest.approx(0.5)), (4, pytest.approx(0.5))]
    assert nxt["config"]["dapo"]["global_step"] == 4
