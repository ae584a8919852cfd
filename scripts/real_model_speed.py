"""Generation speed and first-turn logprob gap of the real model through each sampling backend.

    python scripts/real_model_speed.py [--model DIR] [--backends vllm,hf,openai] [--base-url URL] [--n 4]
        [--tokens 128] [--dtype auto]

For each backend: start it (timed: the vLLM engine's start includes compilation), send one warm-up request, then
N concurrent requests of up to --tokens new tokens (the paper scaffold's system prompt and one example issue,
temperature 1, seeds 0..N-1) and report generated tokens / wall seconds. The sampled tokens' logprobs are compared
with a transformers fp32 forward pass over the same ids (`swerl_cli.policy.gap`): mean and max |difference|.
`openai` needs a running server (`--base-url`, e.g. scripts/rl-vllm.sh ensure). One JSON line per backend on stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from swerl_cli.agent.prompts import load_prompts
from swerl_cli.collect import CollectConfig, build_policy
from swerl_cli.policy.base import Sampling
from swerl_cli.policy.gap import first_turn_gaps, load_trainer
from swerl_cli.streams.stdio import engine_output_to_stderr, records_stream

ISSUE = Path(__file__).resolve().parents[1] / "examples" / "tasks.jsonl"


def messages() -> list[dict[str, str]]:
    """The paper scaffold's system prompt and the first example task's issue."""
    prompts = load_prompts(None)
    task = json.loads(ISSUE.read_text().splitlines()[0])
    return [
        {"role": "system", "content": prompts.system},
        {"role": "user", "content": task["problem_statement"]},
    ]


async def measure(policy: Any, n: int, tokens: int) -> tuple[float, float, list[dict[str, Any]]]:
    """(start + warm-up seconds, tokens/s over n concurrent requests, records for the gap check)."""
    msgs = messages()
    t0 = time.perf_counter()
    await policy.acomplete(msgs, Sampling(max_new_tokens=8, seed=99))
    start_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    comps = await asyncio.gather(*(policy.acomplete(msgs, Sampling(max_new_tokens=tokens, seed=s)) for s in range(n)))
    wall = time.perf_counter() - t1
    await policy.aclose()
    generated = sum(len(c.token_ids or []) for c in comps)
    backend = policy.describe()["backend"]
    recs = [
        {
            "policy": {"backend": backend},
            "turns": [{"prompt_token_ids": c.prompt_token_ids, "token_ids": c.token_ids, "logprobs": c.logprobs}],
        }  # fmt: skip
        for c in comps
    ]
    return start_s, generated / wall, recs


def main(argv: list[str]) -> int:
    opts = {"--model": ".cache/smollm2-135m-instruct", "--backends": "vllm,hf", "--base-url": "", "--n": "4",
            "--tokens": "128", "--dtype": "auto"}  # fmt: skip
    for i in range(0, len(argv), 2):
        if argv[i] not in opts or i + 1 >= len(argv):
            sys.stderr.write(__doc__ or "")
            return 2
        opts[argv[i]] = argv[i + 1]
    with engine_output_to_stderr():  # the engine's processes log to descriptor 1: only the results go to stdout
        run(opts)
    return 0


def run(opts: dict[str, str]) -> None:
    """Measure each backend in `opts["--backends"]` and write one JSON line per backend."""
    trainer = load_trainer(opts["--model"])
    out = records_stream()
    for backend in opts["--backends"].split(","):
        fields: dict[str, Any] = {"policy": backend, "concurrency": int(opts["--n"]), "dtype": opts["--dtype"]}
        if backend == "openai":
            fields.update(model="swerl-policy", base_url=(opts["--base-url"],))
        else:
            fields["model"] = opts["--model"]
        policy = build_policy(CollectConfig(**fields))
        start_s, rate, recs = asyncio.run(measure(policy, int(opts["--n"]), int(opts["--tokens"])))
        (gap,) = first_turn_gaps(trainer, recs)
        row = {"backend": backend, "start_and_warmup_s": round(start_s, 1), "tokens_per_s": round(rate, 1),
               "concurrency": int(opts["--n"]), "mean_abs_gap": gap["mean_abs"], "max_abs_gap": gap["max_abs"],
               "gap_tokens": gap["tokens"], "describe": policy.describe()}  # fmt: skip
        out.write((json.dumps(row) + "\n").encode())
        out.flush()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
