"""`swerl convert --to swebench-preds` keeps every patch (issue 43): a predictions file read with `--from swerl`
asked for `--model-name` and then wrote every `model_patch` empty (324 of 324 on a leaderboard submission), and
swerl's own records without `--from swerl` were SFT rows (model lost) or an unknown format (graded records)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_swerl

# A leaderboard-style submission: two instances, multi-file diffs (a modified file, a new file, a deletion).
PATCH_A = """diff --git a/astropy/modeling/separable.py b/astropy/modeling/separable.py
index a308e27..45bea36 100644
--- a/astropy/modeling/separable.py
+++ b/astropy/modeling/separable.py
@@ -242,7 +242,7 @@ def _cstack(left, right):
         cright = _coord_matrix(right, 'right', noutp)
     else:
         cright = np.zeros((noutp, right.shape[1]))
-        cright[-right.shape[0]:, -right.shape[1]:] = 1
+        cright[-right.shape[0]:, -right.shape[1]:] = right
 
     return np.hstack([cleft, cright])
 
diff --git a/astropy/modeling/tests/test_nested.py b/astropy/modeling/tests/test_nested.py
new file mode 100644
index 0000000..1b2c3d4
--- /dev/null
+++ b/astropy/modeling/tests/test_nested.py
@@ -0,0 +1,3 @@
+def test_nested():
+    # "quotes", tabs\tand unicode: \u00e9
+    assert True
"""
PATCH_B = """diff --git a/django/core/validators.py b/django/core/validators.py
--- a/django/core/validators.py
+++ b/django/core/validators.py
@@ -94,7 +94,7 @@ class URLValidator(RegexValidator):
-    regex = _lazy_re_compile(r'^(?:[a-z0-9.+-]*)://', re.IGNORECASE)
+    regex = _lazy_re_compile(r'\\A(?:[a-z0-9.+-]*)://\\Z', re.IGNORECASE)
diff --git a/django/old.py b/django/old.py
deleted file mode 100644
index e69de29..0000000
"""
MODEL = "20240620_sweagent_claude3.5sonnet"
ROWS = [
    {"instance_id": "astropy__astropy-12907", "model_name_or_path": MODEL, "model_patch": PATCH_A},
    {"instance_id": "django__django-11099", "model_name_or_path": MODEL, "model_patch": PATCH_B},
    {"instance_id": "sympy__sympy-20590", "model_name_or_path": MODEL, "model_patch": None},  # submitted nothing
]


def _expected(model: str = MODEL) -> list[dict]:
    return [{**r, "model_name_or_path": model, "model_patch": r["model_patch"] or ""} for r in ROWS]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _preds(*args: str) -> list[dict]:
    res = run_swerl("convert", "--to", "swebench-preds", *args)
    assert res.returncode == 0, res.stderr.decode()
    assert res.stderr.decode().endswith(f"{len(ROWS)} predictions written, 0 skipped\n")
    return [json.loads(line) for line in res.stdout.splitlines()]


@pytest.mark.parametrize("source", ["auto", "preds", "swerl"])
def test_a_predictions_file_keeps_every_patch_and_its_model(tmp_path: Path, source: str) -> None:
    src = _jsonl(tmp_path / "all_preds.jsonl", ROWS)
    assert _preds("--from", source, str(src)) == _expected()  # --from swerl: empty patches, --model-name asked before


def test_preds_json_through_from_swerl_keeps_the_patches(tmp_path: Path) -> None:
    src = tmp_path / "preds.json"
    src.write_text(json.dumps({r["instance_id"]: r for r in ROWS}))
    assert _preds("--from", "swerl", str(src)) == _expected()


def test_model_name_sets_the_model_and_leaves_the_patches(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "all_preds.jsonl", ROWS)
    assert _preds("--from", "swerl", "--model-name", "org/renamed", str(src)) == _expected("org/renamed")
    assert _preds("--model-name", "org/renamed", str(src)) == _expected("org/renamed")


def test_a_row_without_model_asks_for_model_name_on_that_row(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "p.jsonl", [{k: v for k, v in ROWS[0].items() if k != "model_name_or_path"}])
    res = run_swerl("convert", "--from", "swerl", "--to", "swebench-preds", str(src))
    assert res.returncode == 4
    assert f"{src}:1: field 'model_name_or_path': missing: the record names no model; pass --model-name" in (
        res.stderr.decode()
    )


def test_swerl_records_are_recognised_without_from_swerl(tmp_path: Path) -> None:
    preds = _jsonl(tmp_path / "all_preds.jsonl", ROWS)
    trajs = tmp_path / "trajs.jsonl"
    res = run_swerl("convert", str(preds), "-o", str(trajs))
    assert res.returncode == 0, res.stderr.decode()
    assert _preds(str(trajs)) == _expected()  # was read as SFT rows: model_name_or_path "sft"
    # graded records (no messages) were an unknown format: nothing written, exit 4
    graded = [{**json.loads(line), "grade": {"status": "resolved"}} for line in trajs.read_text().splitlines()]
    graded = [{**g, "schema": "swerl.graded/1"} for g in graded]
    for g in graded:
        del g["messages"]
    src = _jsonl(tmp_path / "graded.jsonl", graded)
    assert _preds(str(src)) == _expected()
    # --to swerl passes swerl records through as they are (not re-converted as SFT rows under new ids)
    res = run_swerl("convert", str(trajs))
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout.decode() == trajs.read_text()
