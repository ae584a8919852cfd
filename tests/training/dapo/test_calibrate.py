"""scripts/dapo_calibrate.py on the tiny model: an RFT checkpoint with its AdamW state, a fixed graded batch, and
the forward-only probe of every optimizer-start candidate (issue 41: fresh eps 1e-8 / 1e-2, carried moments)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.records import rollout
from tests.training.fixtures import launch_swerl, make_trajectory, write_jsonl

pytestmark = [pytest.mark.train, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]


def _graded(tok, n_groups: int = 2, g: int = 4) -> list[dict]:
    """Graded groups whose turns are real text (```command fences): resolved on even samples."""
    recs = []
    for k in range(n_groups):
        for i in range(g):
            traj = make_trajectory(tok, 10 * k + i, seed=3)
            rec = rollout(f"task-{k}", i, resolved=i % 2 == 0, turns=3)
            rec.update(turns=traj["turns"], messages=traj["messages"])
            recs.append(rec)
    return recs


def test_frame_tokens_are_fences_and_the_command_word(tiny_model: Path) -> None:
    from transformers import AutoTokenizer

    from swerl_cli.training.probe import frame_spans, token_masks

    text = "Step 0: let me check.\n```command\ngrep -rn parse src/\n```"
    got = [text[a:b] for a, b in sorted(frame_spans(text))]
    assert got == ["```command\n", "grep", "```"]
    tok = AutoTokenizer.from_pretrained(tiny_model)
    ids = tok.encode(text, add_special_tokens=False)
    marked, edit = token_masks(tok, ids, [1] * len(ids))
    assert not any(edit)
    frame_text = "".join(tok.decode([t]) for t, m in zip(ids, marked, strict=True) if m)
    assert "```" in frame_text
    assert "grep" in frame_text
    assert "parse" not in frame_text
    assert "check" not in frame_text


def test_calibration_ranks_the_optimizer_starts(tiny_model: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    sft = write_jsonl(tmp_path / "sft.jsonl", [make_trajectory(tok, i) for i in range(8)])
    rft = tmp_path / "rft"
    launch_swerl(["rft", str(sft), "--model", str(tiny_model), "--output", str(rft), "--lr", "1e-3",
                  "--warmup-steps", "0", "--batch-size", "2", "--save-optimizer"], 1)  # fmt: skip
    graded = write_jsonl(tmp_path / "graded.jsonl", _graded(tok))
    gold = write_jsonl(tmp_path / "gold.jsonl", [make_trajectory(tok, 50 + i, seed=4) for i in range(2)])
    frame = write_jsonl(tmp_path / "frame.jsonl", [make_trajectory(tok, 70 + i, seed=5) for i in range(2)])
    cmd = [sys.executable, str(ROOT / "scripts" / "dapo_calibrate.py"), "--model", str(rft), "--graded", str(graded),
           "--gold", str(gold), "--frame", str(frame), "--out", str(tmp_path / "cal"), "--lr", "1e-3",
           "--candidates", "eps=1e-8,eps=1e-2,carried,carried-v",
           "--choice", str(tmp_path / "choice.json"), "--", "--group-size", "4", "--batch-size", "8",
           "--micro-batch-tokens", "512", "--weight-decay", "0"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    rows = {r["candidate"]: r for r in map(json.loads, proc.stdout.decode().splitlines())}
    assert list(rows) == ["eps=1e-8", "eps=1e-2", "carried", "carried-v"]
    assert [r["optimizer_start"] for r in rows.values()] == ["fresh", "fresh", "init", "init-second"]
    assert all(r["frame_tokens"] > 0 and r["gold_action_tokens"] > 0 and r["steps"] == 1 for r in rows.values())
    # fresh Adam at eps 1e-8 is sign descent (every weight moves ~lr); eps 1e-2 damps the small-gradient weights
    assert rows["eps=1e-2"]["frame_drift"] < rows["eps=1e-8"]["frame_drift"]
    assert rows["carried"]["frame_drift"] != rows["eps=1e-8"]["frame_drift"]
    # the RFT run's momentum continues the RFT direction (gold and frame text are the demonstrations' kind): the
    # carried start raises their logprob, without the first moment it does not
    assert rows["carried"]["gold_delta"] > 0
    assert rows["carried-v"]["gold_delta"] < rows["carried"]["gold_delta"]
    assert (tmp_path / "cal" / "calibration.jsonl").read_text().count("\n") == 4
    assert "gold/drift" in proc.stderr.decode()
    choice = json.loads((tmp_path / "choice.json").read_text())
    up = [r for r in rows.values() if r["gold_delta"] > 0 and r["frame_drift"] <= 1e-3]
    assert choice["candidate"] == (max(up, key=lambda r: r["gold_delta"])["candidate"] if up else "eps=1e-8")
    assert choice["flags"] == rows[choice["candidate"]]["flags"]


def test_edit_turn_tokens_are_the_edit_command_turns(tiny_model: Path) -> None:
    from transformers import AutoTokenizer

    from swerl_cli.training.probe import token_masks

    tok = AutoTokenizer.from_pretrained(tiny_model)
    a = tok.encode("I open it.\n```command\nopen a.py 3\n```", add_special_tokens=False)
    b = tok.encode("I fix it.\n```command\nedit --file a.py 3:3 'x = 1'\n```", add_special_tokens=False)
    ids = a + [0, 0] + b
    _, edit = token_masks(tok, ids, [1] * len(a) + [0, 0] + [1] * len(b))
    assert edit == [False] * (len(a) + 2) + [True] * len(b)


def test_the_choice_rule_takes_the_largest_gain_within_the_drift_budget() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    from dapo_calibrate import choose

    # paper-mini-gain's first calibration: both drifts at the noise floor; the ratio rule took the 12x smaller step
    rows = [
        {"candidate": "eps=1e-8", "gold_delta": 0.0139, "frame_drift": 1.9e-5},
        {"candidate": "carried-v", "gold_delta": 0.0011, "frame_drift": 1.1e-6},
        {"candidate": "carried", "gold_delta": 0.05, "frame_drift": 0.2},  # over the budget
        {"candidate": "eps=1e-2", "gold_delta": -0.01, "frame_drift": 1e-7},  # a gold loss never wins
    ]
    assert choose(rows)[0]["candidate"] == "eps=1e-8"
    assert choose(rows, max_drift=1.0)[0]["candidate"] == "carried"
    assert choose([{**r, "gold_delta": -1.0} for r in rows])[0] is None
    assert "drifted" in choose([rows[2]])[1]


def test_rechoose_applies_todays_rule_to_a_recorded_choice(tmp_path: Path) -> None:
    """--rechoose: the recorded candidates under the current rule, no update run; a file that is not a choice is
    one line, exit 3."""
    rows = [
        {"candidate": "eps=1e-8", "gold_delta": 0.0139, "frame_drift": 1.9e-5, "flags": ["--adam-eps", "1e-08"]},
        {"candidate": "carried-v", "gold_delta": 0.0011, "frame_drift": 1.1e-6, "flags": ["--init-optimizer", "R"]},
    ]
    old = tmp_path / "choice.json"
    old.write_text(json.dumps({"candidate": "carried-v", "flags": rows[1]["flags"], "rule": "ratio",
                               "candidates": rows, "inputs": {"graded": "g.jsonl"}}))  # fmt: skip
    script = [sys.executable, str(ROOT / "scripts" / "dapo_calibrate.py"), "--rechoose"]
    p = subprocess.run([*script, str(old), str(tmp_path / "new.json")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    new = json.loads((tmp_path / "new.json").read_text())
    assert (new["candidate"], new["flags"]) == ("eps=1e-8", ["--adam-eps", "1e-08"])
    assert new["inputs"] == {"graded": "g.jsonl", "rechosen_from": str(old)}
    p = subprocess.run([*script, str(old), str(tmp_path / "tight.json"), "1e-6"], capture_output=True, text=True)
    assert p.returncode == 0
    assert json.loads((tmp_path / "tight.json").read_text())["candidate"] == "eps=1e-8"
    assert "every gain drifted" in json.loads((tmp_path / "tight.json").read_text())["rule"]
    (tmp_path / "bad.json").write_text("not json\n")
    p = subprocess.run([*script, str(tmp_path / "bad.json"), str(tmp_path / "x.json")], capture_output=True, text=True)
    assert p.returncode == 3
    assert len(p.stderr.strip().splitlines()) == 1
    assert "bad.json" in p.stderr
    assert not (tmp_path / "x.json").exists()


def test_init_from_keeps_the_state_so_the_chosen_update_can_continue(tiny_model: Path, tmp_path: Path) -> None:
    """make paper-mini-gain's mode: --model without optimizer_state/ (the RFT weights), the moments from --init-from,
    the optimizer state on, so the candidate's checkpoint is the run's iteration-0 update with its state saved."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    sft = write_jsonl(tmp_path / "sft.jsonl", [make_trajectory(tok, i) for i in range(4)])
    rft = tmp_path / "rft"
    launch_swerl(["rft", str(sft), "--model", str(tiny_model), "--output", str(rft), "--lr", "1e-3",
                  "--warmup-steps", "0", "--batch-size", "2", "--save-optimizer"], 1)  # fmt: skip
    weights = tmp_path / "weights"
    weights.mkdir()
    for f in rft.iterdir():
        if f.name != "optimizer_state":
            (weights / f.name).symlink_to(f)
    graded = write_jsonl(tmp_path / "graded.jsonl", _graded(tok))
    gold = write_jsonl(tmp_path / "gold.jsonl", [make_trajectory(tok, 50, seed=4)])
    frame = write_jsonl(tmp_path / "frame.jsonl", [make_trajectory(tok, 70, seed=5)])
    base = [sys.executable, str(ROOT / "scripts" / "dapo_calibrate.py"), "--graded", str(graded), "--gold", str(gold),
            "--frame", str(frame), "--out", str(tmp_path / "cal"), "--lr", "1e-3", "--candidates", "carried-v",
            "--init-from", str(rft), "--choice", str(tmp_path / "choice.json")]  # fmt: skip
    extra = ["--", "--group-size", "4", "--batch-size", "8", "--micro-batch-tokens", "512"]
    refused = subprocess.run([*base, "--model", str(rft), *extra], capture_output=True, cwd=ROOT, timeout=600)
    assert refused.returncode != 0
    assert b"holds optimizer_state" in refused.stderr
    proc = subprocess.run([*base, "--model", str(weights), *extra], capture_output=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    row = json.loads(proc.stdout.decode().splitlines()[0])
    assert row["optimizer_start"] == "init-second"
    assert "--no-carry-optimizer" not in row["flags"]
    assert (tmp_path / "cal" / "carried-v" / "optimizer_state" / "latest").is_file()
    assert json.loads((tmp_path / "cal" / "carried-v.summary.json").read_text())["steps"] == 1
    assert (tmp_path / "cal" / "carried-v.metrics.jsonl").stat().st_size > 0
