"""The flags several policy backends read, each declared here once with its help (`core.config.Flag`): a backend's
`Options` field takes one as `model: str | None = flag(None, MODEL)`, and `swerl collect`'s flag of that name reads
its default and help from the backends (`policy.option_field`). A flag only one backend reads is declared on that
backend's `Options` itself."""

from __future__ import annotations

from swerl_cli.core.config import Flag

MODEL = Flag("Model name (openai) or checkpoint directory (hf, vllm).")
POLICY_VERSION = Flag(
    "Checkpoint identity recorded in policy.version and each turn's policy_version; 'server' (openai): read "
    "each turn's from the server's GET /weight_info (the async loop)."
)
DTYPE = Flag(
    "Sampler dtype of the hf and vllm policies: auto (default: the trainer's, fp32 on CPU, bf16 on CUDA), "
    "float32 (fp32), bfloat16 (bf16), float16 (fp16)."
)
