"""The optimizer-step loop and the metrics log that `swerl rft` and `swerl dapo` share.

    log = MetricsLog(path, kind="rft", start=resumed_step, report_to="none", run_config=cfg_dict)
    last = run_steps(engine, plans, samples, pad, loss_for=..., metrics_for=..., log=log)

`run_steps` builds each rank's micro-batches (idle ranks run empty rows), times one optimizer step, and hands the
engine's summed stats to the stage's `metrics_for`, which turns them into that stage's metric fields. Every metrics
line of both stages goes through `MetricsLog.write`, the one place where sinks (JSONL, tensorboard, wandb) receive
them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from swerl_cli.errors import ConfigError
from swerl_cli.training import dist
from swerl_cli.training.batching import StepPlan, rank_micro_batches

LossFor = Callable[[StepPlan], Any]  # plan -> the engine's loss_fn(logp, batch) -> (loss, stats)
MetricsFor = Callable[[StepPlan, dict[str, float], float], dict[str, Any]]  # (plan, stats, step_s) -> fields
OnStep = Callable[[dict[str, Any], int], None]  # (metrics, total steps), rank 0 only


class MetricsLog:
    """One JSON line per optimizer step on rank 0 (`path`), plus tensorboard / wandb when asked.

    `start > 0` (a resumed run) keeps the lines of steps <= start and drops later ones; otherwise the file starts
    empty. Ranks other than 0 write nothing.
    """

    def __init__(
        self,
        path: Path,
        *,
        kind: str,
        start: int = 0,
        report_to: str = "none",
        run_config: dict[str, Any] | None = None,
    ):
        self.path, self.kind = Path(path), kind
        self.fh: Any = None
        self.sinks: list[Any] = []  # objects with write(metrics) and close()
        if not dist.is_main():
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        kept = []
        if start > 0 and self.path.exists():
            kept = [ln for ln in self.path.read_bytes().splitlines(keepends=True) if _step_of(ln) <= start]
        self.path.write_bytes(b"".join(kept))
        self.fh = open(self.path, "ab")  # closed in close()
        if report_to == "tensorboard":
            self.sinks.append(_TensorBoard(self.path.parent / "tensorboard", kind))
        elif report_to == "wandb":
            self.sinks.append(_Wandb(run_config or {}))

    def write(self, metrics: dict[str, Any]) -> None:
        """Record one step's metrics (rank 0 only): the single place every metrics line goes through."""
        if self.fh is None:
            return
        self.fh.write(orjson.dumps(metrics, option=orjson.OPT_APPEND_NEWLINE))
        self.fh.flush()
        for sink in self.sinks:
            sink.write(metrics)

    def close(self) -> None:
        """Flush and close every sink."""
        if self.fh is not None:
            self.fh.close()
            self.fh = None
        for sink in self.sinks:
            sink.close()
        self.sinks = []


def scalars(metrics: dict[str, Any]) -> dict[str, float]:
    """The numeric fields of a metrics line except `step` (what a scalar sink plots)."""
    return {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "step"}


class _TensorBoard:
    def __init__(self, logdir: Path, kind: str):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise ConfigError(
                "--report-to tensorboard needs the tensorboard package: pip install tensorboard"
            ) from None
        self.writer, self.kind = SummaryWriter(str(logdir)), kind

    def write(self, metrics: dict[str, Any]) -> None:
        for k, v in scalars(metrics).items():
            self.writer.add_scalar(f"{self.kind}/{k}", v, metrics["step"])

    def close(self) -> None:
        self.writer.close()


class _Wandb:
    def __init__(self, run_config: dict[str, Any]):
        try:
            import wandb
        except ImportError:
            raise ConfigError("--report-to wandb needs the wandb package: pip install wandb") from None
        self.run = wandb.init(config=run_config, resume="allow")

    def write(self, metrics: dict[str, Any]) -> None:
        self.run.log(scalars(metrics), step=metrics["step"])

    def close(self) -> None:
        self.run.finish()


def _step_of(line: bytes) -> int:
    try:
        return int(orjson.loads(line).get("step", 0))
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        return 1 << 62


def run_steps(
    engine: Any,
    plans: list[StepPlan],
    samples: list[Any],
    pad_token_id: int,
    *,
    loss_for: LossFor,
    metrics_for: MetricsFor,
    log: MetricsLog,
    start: int = 0,
    stop: int | None = None,
    on_step: OnStep | None = None,
    after_step: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Run optimizer steps `plans[start:stop]`; returns the last step's metrics ({} when none ran).

    Each metrics line is `{"step", <metrics_for fields>, "lr", "grad_norm", "samples", "micro_batches", "step_s",
    "elapsed_s"}`; step_s is the optimizer step alone (micro-batch collation included, logging excluded).
    """
    stop = len(plans) if stop is None else min(stop, len(plans))
    last: dict[str, Any] = {}
    t_run = time.perf_counter()
    for plan in plans[start:stop]:
        t0 = time.perf_counter()
        batches = rank_micro_batches(plan, samples, engine.dp_rank, pad_token_id)
        stats = engine.train_step(batches, loss_for(plan))
        dt = time.perf_counter() - t0
        step = plan.index + 1
        last = {
            "step": step,
            **metrics_for(plan, stats, dt),
            "lr": stats["lr"],
            "grad_norm": stats["grad_norm"],
            "samples": plan.n_samples,
            "micro_batches": plan.n_micro,
            "step_s": dt,
            "elapsed_s": time.perf_counter() - t_run,
        }
        log.write(last)
        if on_step is not None and dist.is_main():
            on_step(last, len(plans))
        if after_step is not None:
            after_step(step)
    return last
