"""Issue 43: what RL users read first, per optimizer step, in metrics.jsonl, TensorBoard and `swerl report`: the
policy entropy of the sampled tokens (mean -log p of the action tokens under the policy being updated), the gradient
norm and the learning rate. Before, entropy was not measured and the report drew only the loss."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest

from tests.conftest import run_swerl
from tests.records import graded, rollout, write_jsonl
from tests.training.tb import read_scalars

PROMPTS = 6  # prompt tokens of every sample


def _rollouts() -> list[dict]:
    """Two mixed groups of four one-turn samples (every sample kept: one optimizer step with --batch-size 8)."""
    rng = random.Random(11)
    return [
        rollout(g, i, resolved=i % 2 == 0, prompt=[rng.randrange(5, 1500) for _ in range(PROMPTS)],
                token_ids=[[rng.randrange(5, 1500) for _ in range(3 + i)]])
        for g in ("A", "B")
        for i in range(4)
    ]  # fmt: skip


def _expected_entropy(model_dir: Path, records: list[dict]) -> float:
    """-mean log p(token | prefix) over every action token, under the starting weights (the first step's)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    total, n = 0.0, 0
    for rec in records:
        turn = rec["turns"][0]
        ids = torch.tensor([turn["prompt_token_ids"] + turn["token_ids"]])
        with torch.no_grad():
            logp = torch.log_softmax(model(ids).logits[0, :-1].float(), -1).gather(1, ids[0, 1:, None])[:, 0]
        action = logp[PROMPTS - 1 :]  # the positions that predict token_ids
        total, n = total - float(action.sum()), n + action.numel()
    return total / n


@pytest.mark.train
def test_dapo_writes_entropy_grad_norm_and_lr_per_step_to_metrics_and_tensorboard(
    tiny_model: Path, tmp_path: Path
) -> None:
    records = _rollouts()
    data = write_jsonl(tmp_path / "graded.jsonl", records)
    out, tb = tmp_path / "ckpt", tmp_path / "tb"
    res = run_swerl(
        "dapo", str(data), "--model", str(tiny_model), "--output", str(out), "--batch-size", "8",
        "--tensorboard", str(tb), "--seed", "1", timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr.decode()[-3000:]
    summary = json.loads(res.stdout)
    rows = [json.loads(x) for x in Path(summary["metrics_file"]).read_text().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert row["entropy"] == pytest.approx(_expected_entropy(tiny_model, records), rel=2e-3)
    assert math.isfinite(row["grad_norm"])
    assert row["grad_norm"] > 0
    assert row["lr"] > 0
    events = read_scalars(tb)
    for key in ("entropy", "grad_norm", "lr"):
        assert [s for s, _ in events[key]] == [1]
        assert events[key][0][1] == pytest.approx(row[key], rel=1e-5, abs=1e-12)


def test_report_draws_entropy_grad_norm_and_lr_per_step(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for k in range(2):
        it = run / f"iter-{k}"
        it.mkdir(parents=True)
        write_jsonl(it / "graded.jsonl", [graded(f"t{j}", 0, j == k, run=f"iter-{k}") for j in range(2)])
        steps = [{"step": s, "loss": 0.5 - s / 10, "entropy": 2.0 - k / 4 - s / 8, "grad_norm": 1.5 + s,
                  "lr": 1e-6 * (s + 1)} for s in (1, 2, 3)]  # fmt: skip
        write_jsonl(it / "metrics.jsonl", steps)
    page = tmp_path / "r.html"
    res = run_swerl("report", str(run), "-o", str(page))
    assert res.returncode == 0, res.stderr.decode()
    html = page.read_text()
    for key, title in (("loss", "loss"), ("entropy", "policy entropy"), ("grad_norm", "gradient norm"),
                       ("lr", "learning rate")):  # fmt: skip
        chart = re.search(rf'<figure class="chart" data-chart="step_{key}">(.*?)</figure>', html, re.S)
        assert chart, key
        assert title in chart.group(1)
        assert len(re.findall(rf'<circle class="pt" data-series="{key}"', chart.group(1))) == 6  # 2 iterations x 3
    values = re.findall(r'data-series="entropy" data-value="([^"]+)"', html)
    assert [float(v) for v in values][:3] == pytest.approx([2.0 - 1 / 8, 2.0 - 2 / 8, 2.0 - 3 / 8])


def test_report_header_counts_in_the_singular_and_equal_curves_stay_visible(tmp_path: Path) -> None:
    """The demo screenshot read "1 tasks", and a reward with no step penalty hid its twin curve exactly."""
    src = tmp_path / "g.jsonl"
    write_jsonl(src, [graded("t0", 0, True, turns=2)])
    page = tmp_path / "r.html"
    res = run_swerl("report", str(src), "-o", str(page))
    assert res.returncode == 0, res.stderr.decode()
    assert "1 iteration ·\n1 record · 1 task ·" in page.read_text()
    # two iterations whose records take 2 turns (below l_thr): both reward curves are equal
    files = [str(write_jsonl(tmp_path / f"it{k}.jsonl", [graded("t0", 0, k == 1, turns=2)])) for k in range(2)]
    res = run_swerl("report", *files, "-o", str(page))
    assert res.returncode == 0, res.stderr.decode()
    chart = re.search(r'data-chart="reward">(.*?)</figure>', page.read_text(), re.S)
    assert chart
    pts = re.findall(r'<circle class="pt" data-series="([^"]+)" data-value="([^"]+)"[^>]* r="([\d.]+)"', chart.group(1))
    assert [(name, float(v)) for name, v, _ in pts] == [
        ("test reward", 0.0), ("test reward", 1.0), ("with penalty", 0.0), ("with penalty", 1.0)
    ]  # fmt: skip
    assert pts[0][2] != pts[2][2]  # the same point in two sizes: the wider one shows around the other
    lines = re.findall(r"<polyline [^>]*>", chart.group(1))
    assert len(lines) == 2
    assert "stroke-dasharray" not in lines[0]
    assert "stroke-dasharray" in lines[1]  # the twin is dashed over the solid line
