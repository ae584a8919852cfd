"""A tiny random-weight Qwen2-style model and a locally trained tokenizer, so the whole pipeline runs on a CPU.

`python -m swerl_cli.training.tiny OUT_DIR` (what `make tiny-model` runs) writes a `save_pretrained` directory that
loads through `AutoTokenizer` / `AutoModelForCausalLM`, the same path `--model PATH` takes.

Why the tokenizer pipeline is exactly Qwen2's (NFC + Split(Qwen regex, isolated) + ByteLevel(use_regex=False)):
transformers 5.x forces `Qwen2Tokenizer` for `model_type=qwen2` and rebuilds the normalizer and pre-tokenizer from
code, keeping only vocab and merges. Any other pipeline would encode differently after reload.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
VOCAB_SIZE = 2048

# Qwen2's pre-tokenizer split pattern (contractions, letters, single digits, punctuation runs, newlines, spaces).
QWEN2_SPLIT_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# ChatML. Assistant bodies sit inside {% generation %} so `return_assistant_tokens_mask` marks exactly the
# tokens a policy produces (content + <|im_end|>); tool calls are rendered as <tool_call> JSON inside that span.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'assistant' -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- generation -%}"
    "{{- message['content'] or '' -}}"
    "{%- for call in message.get('tool_calls') or [] -%}"
    "{{- '\\n<tool_call>\\n' + (call['function'] | tojson) + '\\n</tool_call>' -}}"
    "{%- endfor -%}"
    "{{- '<|im_end|>' -}}"
    "{%- endgeneration -%}"
    "{{- '\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

_WORDS = (
    "the file function test error fix issue repo patch class method return value import module line path "
    "directory command output python pytest git diff status grep sed find cat echo ls cd open edit create "
    "search replace submit scroll goto self args kwargs list dict string number none true false raise except "
    "assert expected actual failing passed traceback bug reproduce script check run install package"
).split()
_COMMANDS = (
    "ls -la",
    "cd /project && git status",
    "git diff",
    "grep -rn 'def {w}' src/",
    "find . -name '*.py' | head -20",
    "sed -n '{a},{b}p' {w}.py",
    "cat {w}/__init__.py",
    "python -m pytest -x -q tests/test_{w}.py",
    "python reproduce.py",
    "open {w}.py {a}",
    "edit {a}:{b} << 'EOF'\n    return {w}\nEOF",
    "create reproduce.py",
    'search_file "{w}" {w}.py',
    'replace "{w}" "{w}_new"',
    "submit",
)


def _synthetic_corpus(rng: random.Random, n: int = 1500) -> list[str]:
    """Agent-like text: reasoning, ```command fences, observations, code and shell prompts."""
    docs = []
    for _ in range(n):
        w = rng.choice(_WORDS)
        a = rng.randint(1, 400)
        cmd = rng.choice(_COMMANDS).format(w=w, a=a, b=a + rng.randint(0, 30))
        reasoning = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 25))).capitalize() + "."
        obs = "\n".join(f"{i}:    {' '.join(rng.choice(_WORDS) for _ in range(4))}" for i in range(a, a + 5))
        code = f"def {w}_{a}(self, {rng.choice(_WORDS)}=None):\n    if {w} is None:\n        return {a}\n"
        docs.append(
            f"<|im_start|>assistant\n{reasoning}\n\n```command\n{cmd}\n```<|im_end|>\n"
            f"<|im_start|>user\n{obs}\n(Current directory: /project, current file: {w}.py) bash-$<|im_end|>\n{code}"
        )
    return docs


def _stdlib_corpus(limit_chars: int = 400_000) -> list[str]:
    """A fixed, sorted slice of stdlib source (real Python code) to round out the vocabulary."""
    import textwrap

    root = Path(textwrap.__file__).parent
    out, total = [], 0
    for name in ("textwrap.py", "shlex.py", "difflib.py", "argparse.py", "pathlib.py", "json/decoder.py"):
        p = root / name
        if p.is_file() and total < limit_chars:
            text = p.read_text(encoding="utf-8", errors="replace")[: limit_chars - total]
            out.append(text)
            total += len(text)
    return out


def train_tokenizer(seed: int = 0, vocab_size: int = VOCAB_SIZE):
    """Train a byte-level BPE with Qwen2's exact normalizer/pre-tokenizer and wrap it as a fast HF tokenizer."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = _synthetic_corpus(random.Random(seed)) + _stdlib_corpus()
    tok.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<|endoftext|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = 131072
    return fast


def build_tiny_model(
    out_dir: Path | str,
    seed: int = 0,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    intermediate_size: int = 128,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    tie_embeddings: bool = True,
    vocab_size: int | None = None,
    max_positions: int = 32768,
    device: str = "cpu",
    dtype: str = "float32",
) -> Path:
    """Write tokenizer + random-weight Qwen2 (default hidden 64, 2 layers) to `out_dir` with save_pretrained.

    The size knobs let benchmarks build a compute-bound model (e.g. hidden 256, 4 layers) and the GPU bench
    Qwen2.5-0.5B/1.5B-shaped ones (their 151,936-token vocabulary via `vocab_size`, more than the tokenizer's: the
    bench feeds random ids), initialised on `device` (1.5B parameters take longer to initialise on a CPU than the
    bench runs) and saved in `dtype`.
    """
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer(seed)
    eos_id = tok.convert_tokens_to_ids("<|im_end|>")
    pad_id = tok.convert_tokens_to_ids("<|endoftext|>")
    config = Qwen2Config(
        vocab_size=vocab_size or len(tok),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=tie_embeddings,
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
    )
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen2ForCausalLM(config).to(getattr(torch, dtype))
    model.generation_config = GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    (out / "swerl_tiny_model.json").write_text(json.dumps({"seed": seed, "vocab_size": config.vocab_size}) + "\n")
    return out


# vLLM's CPU attention rejects head_dim 16 (the default's 64 / 4 heads): `--vllm` writes the same model size with
# 2 heads and 1 KV head (head_dim 32), which the real-vLLM tests and the RL loop on CPU serve. Its embeddings are
# untied: vLLM 0.32's in-place weight reload keeps the old LM head of a tied model (the probe check catches it).
VLLM_SHAPE = {"num_heads": 2, "num_kv_heads": 1, "tie_embeddings": False}


def main(argv: list[str] | None = None) -> int:
    """`python -m swerl_cli.training.tiny OUT_DIR [--seed N] [--vllm] [--force]`: idempotent unless --force."""
    args = list(sys.argv[1:] if argv is None else argv)
    force = "--force" in args
    shape: dict[str, Any] = dict(VLLM_SHAPE) if "--vllm" in args else {}
    args = [a for a in args if a not in ("--force", "--vllm")]
    seed = 0
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i : i + 2]
    if len(args) != 1:
        sys.stderr.write("usage: python -m swerl_cli.training.tiny OUT_DIR [--seed N] [--force]\n")
        return 2
    out = Path(args[0])
    if (out / "config.json").is_file() and (out / "swerl_tiny_model.json").is_file() and not force:
        sys.stderr.write(f"tiny model already at {out} (use --force to rebuild)\n")
        return 0
    build_tiny_model(out, seed=seed, **shape)
    sys.stderr.write(f"tiny model written to {out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
