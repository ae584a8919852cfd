"""Share of vLLM's own generation throughput that `swerl collect --policy vllm` keeps, on the real model (SmolLM2).

swerl: `collect --policy vllm`'s code path in this process (`build_policy` from a CollectConfig with the CLI's
defaults: fp32 sampler, KV cache sized for the run, paper scaffold, temperature 1) over the example tasks in real
Docker sandboxes, CONCURRENCY episodes at once. The engine starts on the first request; every episode waits for a
one-token warm-up request, and the clock starts when it returns (engine start and compilation excluded; sandboxes
started meanwhile are not charged). It stops when the last record is emitted. Throughput = generated tokens / that
wall time.

vLLM baseline, measured in the same run: vLLM's offline `LLM.generate` (what `vllm bench throughput` drives) in a
fresh process, with the same engine arguments as swerl's engine (dtype, max_model_len, the same
VLLM_CPU_KVCACHE_SPACE; vLLM's CPU defaults otherwise, as its CPU docs describe) and `max_num_seqs = CONCURRENCY`,
so the engine runs at most as many sequences at once as the agent loop has episodes. It replays exactly the
requests the agent loop made: each turn's prompt token ids and its number of generated tokens (`ignore_eos`,
`max_tokens` = that count), turn-major, after one warm-up request. Prefix caching is vLLM's default on both sides.
Two passes: without logprobs (vLLM's own benchmark) and with the sampled token's logprob (what swerl requests);
the prefix cache is reset before each. Target: swerl keeps >= 80% of the first.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODEL = Path(os.environ.get("SWERL_BENCH_REAL_MODEL", ROOT / ".cache" / "smollm2-135m-instruct"))
TASKS = ROOT / "examples" / "tasks.jsonl"
CONCURRENCY = int(os.environ.get("SWERL_BENCH_VLLM_CONCURRENCY", "4"))
EPISODES = int(os.environ.get("SWERL_BENCH_VLLM_EPISODES", "8"))
MAX_TURNS = int(os.environ.get("SWERL_BENCH_VLLM_TURNS", "3"))
MAX_NEW = int(os.environ.get("SWERL_BENCH_VLLM_MAX_NEW", "96"))

BASELINE = r"""
import json, sys, time
from vllm import LLM, SamplingParams
from vllm.inputs import TokensPrompt
model, reqs_file, conc, engine = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
reqs = json.load(open(reqs_file))
t0 = time.perf_counter()
llm = LLM(model=model, max_num_seqs=conc, **engine)
start_s = time.perf_counter() - t0
prompts = [TokensPrompt(prompt_token_ids=r["prompt"]) for r in reqs]
def params(r, i, logprobs):
    return SamplingParams(max_tokens=r["n"], ignore_eos=True, temperature=r["temperature"], top_p=r["top_p"],
                          seed=i, logprobs=logprobs)
llm.generate(prompts[:1], [SamplingParams(max_tokens=1)], use_tqdm=False)  # warm-up, like swerl's
passes = {}
for name, lp in (("plain", None), ("logprobs", 0)):
    llm.reset_prefix_cache()
    t0 = time.perf_counter()
    outs = llm.generate(prompts, [params(r, i, lp) for i, r in enumerate(reqs)], use_tqdm=False)
    passes[name] = {"s": time.perf_counter() - t0, "tokens": sum(len(o.outputs[0].token_ids) for o in outs)}
print("BASELINE " + json.dumps({"start_s": start_s, "passes": passes}), flush=True)
"""


class WarmPolicy:
    """The collect policy, held back until a one-token request has started and compiled the engine."""

    def __init__(self, inner: Any):
        self.inner, self.name = inner, inner.name
        self.ready_at: float | None = None
        self.start_s = 0.0
        self._warm: asyncio.Future[None] | None = None

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    async def _warmup(self, sampling: Any) -> None:
        t0 = time.perf_counter()
        await self.inner.acomplete([{"role": "user", "content": "Hello."}], replace(sampling, max_new_tokens=1))
        self.ready_at = time.perf_counter()
        self.start_s = self.ready_at - t0

    async def acomplete(self, messages: Any, sampling: Any, *, tools: Any = None, episode: Any = None) -> Any:
        if self._warm is None:
            self._warm = asyncio.ensure_future(self._warmup(sampling))
        await asyncio.shield(self._warm)
        return await self.inner.acomplete(messages, sampling, tools=tools, episode=episode)

    async def aclose(self) -> None:
        await self.inner.aclose()


def run_swerl() -> tuple[list[dict[str, Any]], float, WarmPolicy, Any]:
    """The agent loop on EPISODES example episodes; its records, the warm wall time, the policy and the config."""
    from swerl_cli.collect import CollectConfig
    from swerl_cli.collect.policy import build_policy
    from swerl_cli.collect.scheduler import collect_records
    from swerl_cli.streams.jsonl import read_records

    tasks = list(read_records(str(TASKS)))
    cfg = CollectConfig(
        policy="vllm", model=str(MODEL), samples=-(-EPISODES // len(tasks)), concurrency=CONCURRENCY,
        max_turns=MAX_TURNS, max_new_tokens=MAX_NEW, seed=0, run=f"bench-vllm-{os.getpid()}",
    )  # fmt: skip
    policy = WarmPolicy(build_policy(cfg))
    records: list[dict[str, Any]] = []
    ended: list[float] = []
    collect_records(
        tasks, cfg, records.append, policy=policy,
        on_event=lambda kind, _: ended.append(time.perf_counter()) if kind == "end" else None,
    )  # fmt: skip
    assert policy.ready_at is not None, "the engine never became ready"
    return records, max(ended) - policy.ready_at, policy, cfg


def requests_of(records: list[dict[str, Any]], cfg: Any) -> list[dict[str, Any]]:
    """Every request the agent loop made, turn-major: prompt ids and generated-token count."""
    from swerl_cli.policy.tokens import rebuild_sequence

    per_episode = []
    for rec in records:
        reqs = []
        for k, turn in enumerate(rec["turns"]):
            prompt = rebuild_sequence(rec["turns"][: k + 1])[: turn["n_prompt_tokens"]]
            reqs.append({"prompt": prompt, "n": len(turn["token_ids"])})
        per_episode.append(reqs)
    ordered = [ep[k] for k in range(MAX_TURNS) for ep in per_episode if k < len(ep)]
    return [{**r, "temperature": cfg.temperature, "top_p": cfg.top_p} for r in ordered if r["n"] > 0]


def run_baseline(reqs: list[dict[str, Any]], engine: dict[str, Any]) -> dict[str, Any]:
    """vLLM's offline throughput on the same requests in a fresh process (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="bench-vllm-") as tmp:
        path = Path(tmp) / "requests.json"
        path.write_text(json.dumps(reqs))
        args = [sys.executable, "-c", BASELINE, str(MODEL), str(path), str(CONCURRENCY), json.dumps(engine)]
        p = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    lines = [x for x in p.stdout.splitlines() if x.startswith("BASELINE ")]
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"vLLM baseline failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
    return json.loads(lines[-1].removeprefix("BASELINE "))


def main() -> None:
    """Print both throughputs, each side's configuration and the share swerl keeps."""
    if not (MODEL / "config.json").is_file():
        raise RuntimeError(f"{MODEL}: the real model is missing (make real-model)")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load:.2f} at start (shared machine)")
    records, wall, policy, cfg = run_swerl()
    turns = sum(len(r["turns"]) for r in records)
    tokens = sum(len(t["token_ids"]) for r in records for t in r["turns"])
    errors = sum(r["exit_status"] == "error" for r in records)
    reqs = requests_of(records, cfg)
    engine = {k: v for k, v in policy.describe()["engine_args"].items() if k != "gpu_memory_utilization"}
    kv = os.environ.get("VLLM_CPU_KVCACHE_SPACE")
    base = run_baseline(reqs, engine)
    print(
        f"model {MODEL.name}; {len(records)} episodes ({errors} error records), concurrency {CONCURRENCY}, "
        f"<= {MAX_TURNS} turns x <= {MAX_NEW} new tokens, paper scaffold, temperature {cfg.temperature}; "
        f"{turns} requests, prompt tokens mean {sum(len(r['prompt']) for r in reqs) / max(1, len(reqs)):.0f}"
    )
    print(f"swerl: collect --policy vllm (AsyncLLM in-process) engine args {json.dumps(engine)}, "
          f"VLLM_CPU_KVCACHE_SPACE={kv}; engine start {policy.start_s:.0f} s (excluded)")  # fmt: skip
    print(f"vLLM:  LLM.generate, same engine args + max_num_seqs={CONCURRENCY}, same KV space, the same "
          f"{len(reqs)} requests (ignore_eos, max_tokens = swerl's counts); "
          f"start {base['start_s']:.0f} s (excluded)")  # fmt: skip
    print(f"{'side':44} {'tokens':>7} {'wall s':>7} {'tokens/s':>9}")
    rate = tokens / wall
    print(f"{'swerl collect --policy vllm (agent loop)':44} {tokens:7d} {wall:7.1f} {rate:9.1f}")
    for name, label in (("plain", "vLLM LLM.generate"), ("logprobs", "vLLM LLM.generate, logprobs=0")):
        p = base["passes"][name]
        print(f"{label:44} {p['tokens']:7d} {p['s']:7.1f} {p['tokens'] / p['s']:9.1f}")
    plain, with_lp = (base["passes"][k]["tokens"] / base["passes"][k]["s"] for k in ("plain", "logprobs"))
    share = rate / plain
    print(f"share of vLLM's tokens/s kept by the agent loop: {share * 100:.0f}% (vs logprobs=0: "
          f"{rate / with_lp * 100:.0f}%); target >= 80%: {'met' if share >= 0.8 else 'NOT met'}; "
          f"load average now {os.getloadavg()[0]:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
