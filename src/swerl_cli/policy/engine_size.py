"""Size a vLLM engine from what the run needs, not from a share of the machine; pick the sampler's dtype.

vLLM's CPU backend reserves `gpu_memory_utilization` (default 0.9) of the NUMA node's memory unless
`VLLM_CPU_KVCACHE_SPACE` (GiB) says how large the KV cache is; on a shared machine the share does not exist and the
engine refuses to start. The cache a run needs is known from the checkpoint's config:

    bytes = layers x kv_heads x head_dim x 2 (K and V) x dtype bytes x tokens,   tokens = max context x concurrency

rounded up to whole GiB with a quarter of headroom (and at least 1 GiB). The sampler's dtype defaults to the
trainer's (`auto`: fp32 on CPU, bf16 on CUDA, the rule of `swerl rft/dapo --dtype auto`), because vLLM would
otherwise downcast an fp32 checkpoint to bf16 and every sampled logprob would differ from the trainer's.

    python -m swerl_cli.policy.engine_size serve CKPT CONCURRENCY CONTEXT [SERVER ARGS...]   (scripts/rl-vllm.sh)

prints the flags the server needs beside SERVER ARGS (`--dtype`, `--max-model-len`, on CPU whole prefills) and the
KV-cache GiB. On vLLM's CPU backend prompts are prefilled whole (`whole_prefills`: a chunked prefill of a seeded
request kills the engine core there).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

KV_ENV = "VLLM_CPU_KVCACHE_SPACE"
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2}
ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}  # the names `swerl rft/dapo --dtype` take
DTYPES = ("auto", "float32", "bfloat16", "float16", *ALIASES)
HEADROOM = 1.25


def model_config(model: str) -> dict[str, Any]:
    """config.json of a checkpoint directory ({} for a hub id or an unreadable file)."""
    try:
        data = json.loads((Path(model) / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    data = data.get("text_config", data) if isinstance(data, dict) else {}
    return data if isinstance(data, dict) else {}


def kv_bytes_per_token(config: dict[str, Any], dtype: str) -> int | None:
    """KV-cache bytes one token takes in every layer; None when the config lacks a field."""
    try:
        layers = int(config["num_hidden_layers"])
        heads = int(config["num_attention_heads"])
        kv_heads = int(config.get("num_key_value_heads") or heads)
        head_dim = int(config.get("head_dim") or int(config["hidden_size"]) // heads)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return layers * kv_heads * head_dim * 2 * DTYPE_BYTES.get(dtype, 4)


def max_positions(model: str) -> int | None:
    """The checkpoint's context length (max_position_embeddings), if its config says."""
    value = model_config(model).get("max_position_embeddings")
    return int(value) if isinstance(value, int) and value > 0 else None


def kv_cache_gib(model: str, max_model_len: int, concurrency: int, dtype: str) -> int | None:
    """Whole GiB of KV cache for `concurrency` sequences of `max_model_len` tokens (None: config unreadable)."""
    per_token = kv_bytes_per_token(model_config(model), dtype)
    if per_token is None:
        return None
    need = per_token * max_model_len * max(1, concurrency) * HEADROOM
    return max(1, math.ceil(need / 2**30))


def on_cuda() -> bool:
    """Whether torch sees a CUDA device (where vLLM runs its GPU backend)."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def whole_prefills(max_model_len: int) -> dict[str, Any]:
    """Engine settings for vLLM's CPU backend: every prompt prefilled in one step ({} on CUDA).

    A chunked prefill discards the token sampled at the end of each chunk and rewinds the request's seeded
    generator with set_offset, which a CPU generator lacks ("RuntimeError: CPU Generator does not use offset"):
    the engine core died as soon as a seeded request's prompt was split, that is when the prompts in flight
    outgrew the CPU default budget (4,096 tokens for the in-process engine, 2,048 for `vllm serve`). Without
    chunking a prompt waits for a step with room; the budget must then hold a whole context.
    """
    if on_cuda():
        return {}
    return {"enable_chunked_prefill": False, "max_num_batched_tokens": max(max_model_len, 4096)}


def sampler_dtype(requested: str | None, device: str | None = None) -> str:
    """The dtype the sampler runs in: the request, or the trainer's (`auto`: bf16 on CUDA, fp32 otherwise); with
    `device` (the hf policy's) CUDA means that device, else any CUDA device torch sees (vLLM's)."""
    if requested and requested != "auto":
        return ALIASES.get(requested, requested)
    if device is not None:
        return "bfloat16" if device.startswith("cuda") else "float32"
    return "bfloat16" if on_cuda() else "float32"


def _flag(args: list[str], name: str) -> str | None:
    """The value of `--name V` or `--name=V` in a server's argument list."""
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def server_settings(ckpt: str, concurrency: int, context: int, args: list[str]) -> tuple[list[str], int | None]:
    """The flags a vLLM server of `ckpt` needs beside `args` (the sampler dtype and a context no longer than the
    checkpoint's, unless given), and the KV-cache GiB for `concurrency` such contexts."""
    extra: list[str] = []
    dtype = _flag(args, "--dtype")
    if dtype is None:
        dtype = sampler_dtype("auto")
        extra += ["--dtype", dtype]
    given = _flag(args, "--max-model-len")
    limit = max_positions(ckpt)
    if given is not None and given.isdigit():
        length = int(given)
    else:
        length = min(context, limit) if limit else context
        if limit:
            extra += ["--max-model-len", str(length)]
    whole = whole_prefills(length)
    if whole and _flag(args, "--max-num-batched-tokens") is None and "--enable-chunked-prefill" not in args:
        extra += ["--no-enable-chunked-prefill", "--max-num-batched-tokens", str(whole["max_num_batched_tokens"])]
    return extra, kv_cache_gib(ckpt, length, concurrency, sampler_dtype(dtype))


def main(argv: list[str]) -> int:
    """`serve CKPT CONCURRENCY CONTEXT [SERVER ARGS...]`: line 1 the extra server flags, line 2 the KV GiB."""
    if len(argv) < 4 or argv[0] != "serve" or not argv[2].isdigit() or not argv[3].isdigit():
        sys.stderr.write("usage: python -m swerl_cli.policy.engine_size serve CKPT CONCURRENCY CONTEXT [ARGS...]\n")
        return 2
    extra, gib = server_settings(argv[1], int(argv[2]), int(argv[3]), argv[4:])
    if gib is None:
        sys.stderr.write(f"{argv[1]}/config.json: cannot read the layer and head counts to size the KV cache\n")
        return 3
    sys.stdout.write(" ".join(extra) + "\n" + f"{gib}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
