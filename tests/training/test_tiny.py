"""The tiny model loads through the user's path (AutoTokenizer/AutoModelForCausalLM); its tokenizer survives reload."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.train

CONVERSATION = [
    {"role": "system", "content": "You are a helpful agent."},
    {"role": "user", "content": "Fix the bug in utils.py"},
    {"role": "assistant", "content": "Let me look.\n```command\ngrep -rn 'def parse' src/\n```"},
    {"role": "tool", "content": "src/utils.py:12:def parse(x):"},
    {"role": "assistant", "content": "Submitting.\n```command\nsubmit\n```"},
]


def test_tiny_tokenizer_round_trips_through_autotokenizer(tiny_model: Path) -> None:
    from transformers import AutoTokenizer

    from swerl_cli.training.tiny import train_tokenizer

    trained = train_tokenizer(seed=0)
    reloaded = AutoTokenizer.from_pretrained(tiny_model)
    root = Path(textwrap.__file__).parent
    texts = [(root / n).read_text(encoding="utf-8") for n in ("random.py", "typing.py", "shutil.py")]
    texts += ["Héllo wörld ﬁ 12345 \r\n\t x", "<|im_start|>user\nhi<|im_end|>\n```command\nls -la\n```"]
    for text in texts:
        assert reloaded.encode(text) == trained.encode(text)
    assert reloaded.eos_token == "<|im_end|>"


def test_tiny_chat_template_masks_exactly_assistant_bodies(tiny_model: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    out = tok.apply_chat_template(CONVERSATION, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    masked = [t for t, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m]
    expected = CONVERSATION[2]["content"] + "<|im_end|>" + CONVERSATION[4]["content"] + "<|im_end|>"
    assert tok.decode(masked) == expected
    prompt = tok.apply_chat_template(CONVERSATION[:2], tokenize=False, add_generation_prompt=True)
    assert prompt.endswith("<|im_start|>assistant\n")


def test_tiny_model_loads_and_is_deterministic(tiny_model: Path, tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from swerl_cli.training.tiny import build_tiny_model

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    assert model.config.model_type == "qwen2"
    assert model.config.max_position_embeddings >= 8192
    again = build_tiny_model(tmp_path / "again", seed=0)
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (again / name).read_bytes() == (tiny_model / name).read_bytes()
    other = AutoModelForCausalLM.from_pretrained(build_tiny_model(tmp_path / "other", seed=1))
    ids = torch.tensor([[1, 5, 9, 42]])
    assert not torch.allclose(model(ids).logits, other(ids).logits)
