"""A trajectory whose token ids cannot be rebuilt (a later turn with prefix_ok false, from a chat-completions server)
never stops training: `rft` and `dapo` both take --rerender and --skip-unrebuildable, and say so when neither."""

from __future__ import annotations

import json

from tests.conftest import run_swerl
from tests.records import rollout

MESSAGES = [
    {"role": "system", "content": "You fix bugs."},
    {"role": "user", "content": "Fix it."},
    {"role": "assistant", "content": "Looking.\n```command\nls\n```"},
    {"role": "user", "content": "a.py"},
    {"role": "assistant", "content": "Done.\n```command\nsubmit\n```"},
]


def _records(tmp_path, broken: int = 1):
    recs = []
    for s in range(2):
        r = rollout("A", s, resolved=s == 0, turns=2)
        r["messages"] = MESSAGES
        if s == broken:
            r["turns"][1]["prefix_ok"] = False
            r["turns"][1]["prompt_token_ids"] = [1, 3, 4, 9]
        recs.append(r)
    path = tmp_path / "graded.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_without_a_flag_the_error_names_both_flags(tiny_model, tmp_path):
    path = _records(tmp_path)
    for cmd in (["dapo", "--group-size", "2", "--t-max", "40"], ["rft"]):
        res = run_swerl(*cmd, str(path), "--model", str(tiny_model), "--output", str(tmp_path / "o"))
        err = res.stderr.decode().strip()
        assert res.returncode == 3, err
        assert "Traceback" not in err
        assert f"{path}:2: field 'turns[1].prefix_ok'" in err
        assert "--rerender" in err
        assert "--skip-unrebuildable" in err


def test_dapo_skips_and_counts_and_rerender_takes_the_template_path(tiny_model, tmp_path):
    path = _records(tmp_path)
    common = ["dapo", str(path), "--model", str(tiny_model), "--group-size", "2", "--t-max", "40", "--batch-size", "2"]
    res = run_swerl(*common, "--output", str(tmp_path / "skip"), "--skip-unrebuildable")
    assert res.returncode == 0, res.stderr.decode()[-1500:]
    summary = json.loads(res.stdout.decode().splitlines()[-1])
    assert summary["counts"]["samples_skipped_unrebuildable"] == 1
    assert summary["counts"]["samples_kept"] == 2  # the skipped one still counted in its group's advantages
    # --rerender renders the messages instead of using the token ids: a record without messages then cannot be
    # used (its token ids could have been), which shows the template path was taken; one line, no traceback.
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records[1]["messages"] = []
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    res = run_swerl(*common, "--output", str(tmp_path / "rerender"), "--rerender")
    assert res.returncode == 3
    assert f"{path}:2: field 'messages': empty" in res.stderr.decode()
    assert "Traceback" not in res.stderr.decode()


def test_rft_data_skips_and_counts(tiny_model, tmp_path):
    from swerl_cli.core.model_dir import load_tokenizer
    from swerl_cli.streams.jsonl import read_records
    from swerl_cli.training.data import load_samples

    tok = load_tokenizer(str(tiny_model))
    path = _records(tmp_path)
    samples, stats = load_samples(read_records(str(path)), tok, max_seq_len=4096, skip_unrebuildable=True)
    assert (len(samples), stats.skipped_unrebuildable) == (1, 1)
    samples, stats = load_samples(read_records(str(path)), tok, max_seq_len=4096, rerender=True)
    assert (len(samples), stats.rerendered, stats.skipped_unrebuildable) == (2, 1, 0)
