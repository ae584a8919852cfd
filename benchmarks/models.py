"""The model the rft and dapo benches train: the real model (SmolLM2-135M-Instruct, `make real-model`) by default.

`SWERL_BENCH_TRAIN_MODEL=tiny` (or a missing real model, with a printed note) selects the hidden-256 x 4-layer
Qwen2 body on the tiny tokenizer that `training.tiny` builds, the earlier benches' model. Each model has its own
workload size so one bench stays within a few minutes on 2 cores.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / ".cache" / "smollm2-135m-instruct"


@dataclass(frozen=True)
class BenchModel:
    path: Path
    label: str
    real: bool


def train_model(work: Path) -> BenchModel:
    """The bench's model directory (see the module docstring)."""
    choice = os.environ.get("SWERL_BENCH_TRAIN_MODEL", "smollm2")
    if choice == "smollm2" and (REAL / "config.json").is_file():
        return BenchModel(REAL, "SmolLM2-135M-Instruct (Llama, 30 layers, hidden 576, vocab 49,152; fp32)", True)
    if choice == "smollm2":
        print(f"note: {REAL} is missing (make real-model); the tiny bench model is used instead")
    from swerl_cli.training.tiny import build_tiny_model

    path = build_tiny_model(work / "model", hidden_size=256, num_layers=4, intermediate_size=1024)
    return BenchModel(Path(path), "tiny tokenizer + Qwen2 body, hidden 256 x 4 layers (training.tiny; fp32)", False)


def marked_template_copy(model: BenchModel, work: Path) -> Path:
    """A directory TRL's `assistant_only_loss` can use: the real model's files with a chat template that renders the
    same bytes and marks the assistant's turns with {% generation %} (scripts/paper_mini_template.py, checked
    there); the tiny model's template has the markers already."""
    if not model.real:
        return model.path
    out = work / "trl-model"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "paper_mini_template.py"), str(model.path), str(out)],
                   check=True, cwd=ROOT)  # fmt: skip
    return out
