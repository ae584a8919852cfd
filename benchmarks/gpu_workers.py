"""The GPU bench's workers (benchmarks/gpu_train.py runs each configuration as one of these processes): swerl's
engine steps and TRL `SFTTrainer` steps on packed rows of random ids, one result line per measurement.

    python -m benchmarks.gpu_workers swerl|swerl-z2|swerl-persist|trl MODEL --gc on|off --lengths 8192,32768
                                     --row-tokens 32768 --steps 3
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any

VOCAB = 151936
MARK = "gpu-bench-row "  # a worker's result lines (TRL prints its own dicts on stdout)


def _rows(row_tokens: int, length: int, seed: int) -> list[list[int]]:
    """row_tokens // length documents of random ids."""
    import random

    rng = random.Random(seed)
    return [[rng.randrange(VOCAB) for _ in range(length)] for _ in range(max(1, row_tokens // length))]


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _reset_peak(device: str) -> None:
    import gc

    import torch

    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _peak_gib(device: str) -> float | None:
    import torch

    return torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None


def _failure(e: BaseException) -> str:
    """A result row's `error`: OOM (a result of the configuration), else the exception's first line."""
    if "out of memory" in str(e).lower() or type(e).__name__ == "OutOfMemoryError":
        return "OOM"
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}"


# swerl engine variants beside the default (ZeRO-3), run with --variants at GC off: where single-GPU time goes
VARIANTS = {
    "swerl-z2": "ZeRO-2 instead of ZeRO-3",
    "swerl-persist": "ZeRO-3 with every parameter persistent (stage3_param_persistence_threshold above the largest)",
}


def worker_swerl(model: str, gc: bool, lengths: list[int], row_tokens: int, steps: int, variant: str = "") -> None:
    """One JSON line per (loss, length): the engine's step times on a packed row of `row_tokens` tokens."""
    import torch

    from swerl_cli.training import engine as engine_mod
    from swerl_cli.training.batching import collate
    from swerl_cli.training.dapo_config import DapoConfig
    from swerl_cli.training.dapo_loss import batch_loss
    from swerl_cli.training.data import Sample
    from swerl_cli.training.engine import TrainEngine, fused_adamw
    from swerl_cli.training.losses import create, from_config
    from swerl_cli.training.rft import rft_loss_fn
    from swerl_cli.training.train_config import TrainConfig

    if variant == "swerl-persist":  # the bench's own ds_config change, not an engine option
        base = engine_mod.ds_config

        def persistent(*a: Any, **k: Any) -> dict:
            out = base(*a, **k)
            out["zero_optimization"]["stage3_param_persistence_threshold"] = 10**12
            return out

        engine_mod.ds_config = persistent
    stage = 2 if variant == "swerl-z2" else 3
    cfg = TrainConfig(model=model, zero_stage=stage, dtype="auto", gradient_checkpointing=gc, lr=1e-6)
    eng = TrainEngine.from_config(cfg, total_steps=10**6)
    attn = eng.module.config._attn_implementation
    config = {"zero_stage": stage, "dtype": "bf16" if eng.device.startswith("cuda") else "fp32",
              "master_weights": "fp32", "optimizer": f"torch AdamW (fused={fused_adamw(eng.device)})",
              "gradient_checkpointing": gc}  # fmt: skip
    if variant == "swerl-persist":
        config["stage3_param_persistence_threshold"] = 10**12
    dcfg = DapoConfig()
    for length in lengths:
        docs = _rows(row_tokens, length, seed=length)
        # pi_old near a random model's uniform policy (log 1/V) keeps the DAPO ratios near 1, as on-policy data does
        samples = [
            Sample(
                f"d{i}",
                "bench",
                i,
                ids,
                [0] + [1] * (len(ids) - 1),
                [-11.9] * len(ids),
                True,
                advantage=1.0 if i % 2 == 0 else -1.0,
            )  # fmt: skip
            for i, ids in enumerate(docs)
        ]
        batch = collate(samples)
        n_train = float(sum(s.n_trainable for s in samples))
        losses = {
            "rft": rft_loss_fn(create("sft"), n_train),
            "dapo": batch_loss(from_config(dcfg, "dapo"), n_train, {}),
        }
        for name, loss_fn in losses.items():
            label = f"swerl {name}" + (f" {variant.removeprefix('swerl-')}" if variant else "")
            row: dict[str, Any] = {"trainer": label, "gc": gc, "length": length, "docs": len(docs)}
            row.update({"tokens": batch.n_tokens, "attn": attn, "config": config})
            try:
                _reset_peak(eng.device)
                times = []
                for _ in range(steps + 1):  # the first is the warm-up (allocator, kernel choice)
                    _sync(eng.device)
                    t0 = time.perf_counter()
                    eng.train_step([batch], loss_fn)
                    _sync(eng.device)
                    times.append(time.perf_counter() - t0)
                row.update({"step_s": times[1:], "peak_gib": _peak_gib(eng.device)})
                if name == "dapo":  # the theta_old pass of --old-logprobs trainer: one no-grad forward
                    _sync(eng.device)
                    t0 = time.perf_counter()
                    with torch.no_grad():
                        eng.forward_logprobs(batch)
                    _sync(eng.device)
                    row["old_pass_s"] = time.perf_counter() - t0
            except Exception as e:  # an OOM is a result; anything else is reported as the error
                row["error"] = _failure(e)
                print(MARK + json.dumps(row), flush=True)
                return  # the engine's state after a failed step is not trusted for longer rows
            print(MARK + json.dumps(row), flush=True)


def worker_trl(model: str, gc: bool, lengths: list[int], row_tokens: int, steps: int) -> None:
    """One JSON line per length: TRL SFTTrainer's step times (see the module docstring for its configuration)."""
    import importlib.util

    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    attn = "flash_attention_2" if cuda and importlib.util.find_spec("flash_attn") else "sdpa"
    tok = AutoTokenizer.from_pretrained(model)
    lm = AutoModelForCausalLM.from_pretrained(model, dtype=torch.bfloat16 if cuda else torch.float32,
                                              attn_implementation=attn)  # fmt: skip

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.t0 = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            _sync(device)
            self.t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            _sync(device)
            self.times.append(time.perf_counter() - self.t0)

    for length in lengths:
        docs = _rows(row_tokens, length, seed=length)
        per_step = len(docs)
        ds = Dataset.from_list([{"input_ids": ids} for ids in docs] * (steps + 1))
        row: dict[str, Any] = {"trainer": "TRL SFTTrainer", "gc": gc, "length": length, "docs": per_step}
        row.update({"tokens": sum(map(len, docs)), "attn": attn})
        with tempfile.TemporaryDirectory(prefix="bench-trl-") as out:
            cfg = SFTConfig(output_dir=out, per_device_train_batch_size=per_step, max_steps=steps + 1,
                            learning_rate=1e-6, bf16=cuda, use_cpu=not cuda, padding_free=True,
                            gradient_checkpointing=gc, max_length=None, report_to=[], save_strategy="no",
                            logging_steps=10**6, dataloader_num_workers=0, disable_tqdm=True, seed=0,
                            shuffle_dataset=False)  # fmt: skip
            row["config"] = {k: getattr(cfg, k) for k in ("bf16", "padding_free", "gradient_checkpointing",
                                                          "per_device_train_batch_size")}  # fmt: skip
            timer = StepTimer()
            try:
                _reset_peak(device)
                trainer = SFTTrainer(model=lm, args=cfg, train_dataset=ds, processing_class=tok, callbacks=[timer])
                trainer.train()
                row.update({"step_s": timer.times[1:], "peak_gib": _peak_gib(device)})
            except Exception as e:  # as in worker_swerl
                row["error"] = _failure(e)
            finally:
                trainer = None  # the optimizer state goes before the next length's trainer starts
        print(MARK + json.dumps(row), flush=True)  # after an OOM the next length still runs: a new trainer


def main(argv: list[str] | None = None) -> int:
    """Run one configuration; its rows go to stdout behind MARK."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu_workers")
    ap.add_argument("kind", choices=("swerl", "trl", *VARIANTS))
    ap.add_argument("model")
    ap.add_argument("--gc", choices=("on", "off"), default="off")
    ap.add_argument("--lengths", default="8192,32768")
    ap.add_argument("--row-tokens", type=int, default=32768)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args(argv)
    lengths = [int(x) for x in args.lengths.split(",")]
    gc = args.gc == "on"
    if args.kind == "trl":
        worker_trl(args.model, gc, lengths, args.row_tokens, args.steps)
    else:
        worker_swerl(args.model, gc, lengths, args.row_tokens, args.steps, "" if args.kind == "swerl" else args.kind)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
