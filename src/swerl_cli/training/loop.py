"""The optimizer-step loop and the metrics log that `swerl rft` and `swerl dapo` share.

    log = MetricsLog(path, kind="rft", start=resumed_step, trackers=TrackerSpec(tensorboard="tb"), run_config=cfg_dict)
    last = run_steps(engine, plans, samples, pad, loss_for=..., metrics_for=..., log=log)

`run_steps` builds each rank's micro-batches (idle ranks run empty rows), times one optimizer step, and hands the
engine's summed stats to the stage's `metrics_for`, which turns them into that stage's metric fields. Every metrics
line of both stages goes through `MetricsLog.write`, the one place where sinks (JSONL, and the TensorBoard / wandb
trackers of trackers.py, under the same names) receive them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from swerl_cli.core.errors import OutputError
from swerl_cli.training import dist
from swerl_cli.training.batching import StepPlan, rank_micro_batches
from swerl_cli.training.trackers import Trackers, TrackerSpec

LossFor = Callable[[StepPlan], Any]  # plan -> the engine's loss_fn(logp, batch) -> (loss, stats)
MetricsFor = Callable[[StepPlan, dict[str, float], float], dict[str, Any]]  # (plan, stats, step_s) -> fields
OnStep = Callable[[dict[str, Any], int], None]  # (metrics, total steps), rank 0 only


class MetricsLog:
    """One JSON line per optimizer step on rank 0 (`path`), plus the trackers asked for (TensorBoard, wandb).

    `start > 0` (a resumed run) keeps the lines of steps <= start and drops later ones; otherwise the file starts
    empty. Trackers get each line's numeric fields under the same names, at `step_offset + step` (DAPO numbers its
    steps across a whole RL run this way). Ranks other than 0 write nothing.
    """

    def __init__(
        self,
        path: Path,
        *,
        kind: str,
        start: int = 0,
        trackers: TrackerSpec | None = None,
        run_config: dict[str, Any] | None = None,
        step_offset: int = 0,
    ):
        self.path, self.kind, self.step_offset = Path(path), kind, step_offset
        self.fh: Any = None
        self.trackers = Trackers(trackers or TrackerSpec(), run_config)
        if not dist.is_main():
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            kept = []
            if start > 0 and self.path.exists():
                kept = [ln for ln in self.path.read_bytes().splitlines(keepends=True) if _step_of(ln) <= start]
            self.fh = open(self.path, "wb")  # closed in close(); a device or FIFO is written in place
            self.fh.write(b"".join(kept))
        except OSError as e:
            raise self._error(e) from None

    def _error(self, e: OSError) -> OutputError:
        return OutputError(f"--metrics {self.path}: cannot write: {e.strerror or e}")

    def write(self, metrics: dict[str, Any]) -> None:
        """Record one step's metrics (rank 0 only): the single place every metrics line goes through."""
        if self.fh is None:
            return
        try:
            self.fh.write(orjson.dumps(metrics, option=orjson.OPT_APPEND_NEWLINE))
            self.fh.flush()
        except OSError as e:
            raise self._error(e) from None
        self.trackers.log(metrics, self.step_offset + metrics["step"])

    def write_summary(self, values: dict[str, Any], step: int, prefix: str = "update/") -> None:
        """Send a run summary's numeric fields to the trackers only (not to metrics.jsonl), named `prefix + key`."""
        if self.fh is not None:
            self.trackers.log(values, self.step_offset + step, prefix=prefix)

    def close(self) -> None:
        """Flush and close every sink."""
        if self.fh is not None:
            fh, self.fh = self.fh, None
            try:
                fh.close()
            except OSError:
                pass  # a write error was already raised (a full /dev/full keeps its last buffer)
        self.trackers.close()


def tracker_spec(report_to: str, metrics_path: Path, spec: TrackerSpec | None) -> TrackerSpec:
    """Explicit --tensorboard/--wandb, or the older --report-to (TensorBoard events beside metrics.jsonl)."""
    spec = spec or TrackerSpec()
    tb = spec.tensorboard or (str(metrics_path.parent / "tensorboard") if report_to == "tensorboard" else None)
    return TrackerSpec(tb, spec.wandb or report_to == "wandb")


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
    "step_cpu_s", "elapsed_s"}`; step_s is the optimizer step alone (micro-batch collation included, logging
    excluded), step_cpu_s the CPU time this process spent in it.
    """
    stop = len(plans) if stop is None else min(stop, len(plans))
    last: dict[str, Any] = {}
    t_run = time.perf_counter()
    for plan in plans[start:stop]:
        t0, c0 = time.perf_counter(), time.process_time()
        batches = rank_micro_batches(plan, samples, engine.dp_rank, pad_token_id)
        stats = engine.train_step(batches, loss_for(plan))
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        step = plan.index + 1
        last = {
            "step": step,
            **metrics_for(plan, stats, dt),
            "lr": stats["lr"],
            "grad_norm": stats["grad_norm"],
            "samples": plan.n_samples,
            "micro_batches": plan.n_micro,
            "step_s": dt,
            "step_cpu_s": cpu,  # this process's CPU time (all threads): steadier than wall time on a shared host
            "elapsed_s": time.perf_counter() - t_run,
        }
        log.write(last)
        if on_step is not None and dist.is_main():
            on_step(last, len(plans))
        if after_step is not None:
            after_step(step)
    return last
