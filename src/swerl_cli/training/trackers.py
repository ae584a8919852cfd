"""Step metrics to the trackers users already have: TensorBoard event files and Weights & Biases.

Each sink gets the numeric fields of a metrics.jsonl row under the same names (`loss`, `grad_norm`,
`clip_frac_high`, ...), at the row's step. Only rank 0 writes. A sink that is asked for but not installed is a
ConfigError with the pip command, raised before any training starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from swerl_cli.core.errors import ConfigError
from swerl_cli.training import dist


@dataclass(frozen=True, slots=True)
class TrackerSpec:
    """Which sinks to open: a TensorBoard log directory, and/or a wandb run (WANDB_PROJECT etc. apply)."""

    tensorboard: str | None = None
    wandb: bool = False

    @property
    def any(self) -> bool:
        return bool(self.tensorboard) or self.wandb


def scalars(metrics: dict[str, Any], skip: tuple[str, ...] = ("step",)) -> dict[str, float]:
    """The finite numeric fields of a metrics row: `scalars({"step": 1, "loss": 0.5, "note": "x"}) == {"loss": 0.5}`."""
    out = {}
    for k, v in metrics.items():
        if k in skip or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            continue
        out[k] = float(v)
    return out


class Trackers:
    """The open sinks of one run; `log` and `close` do nothing when none was asked for (or off rank 0)."""

    def __init__(self, spec: TrackerSpec, run_config: dict[str, Any] | None = None):
        self.tb: Any = None
        self.wandb: Any = None
        if not spec.any or not dist.is_main():
            return
        if spec.tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise ConfigError("--tensorboard needs the tensorboard package: pip install tensorboard") from None
            self.tb = SummaryWriter(log_dir=spec.tensorboard)
        if spec.wandb:
            try:
                import wandb
            except ImportError:
                self.close()
                raise ConfigError("--wandb needs the wandb package: pip install wandb") from None
            self.wandb = wandb.init(config=run_config or {}, resume="allow")

    def log(self, metrics: dict[str, Any], step: int, prefix: str = "") -> None:
        """Write the row's numeric fields at `step` (names prefixed by `prefix`, e.g. "update/")."""
        values = {prefix + k: v for k, v in scalars(metrics).items()}
        if self.tb is not None:
            for k, v in values.items():
                self.tb.add_scalar(k, v, step)
            self.tb.flush()
        if self.wandb is not None:
            self.wandb.log(values, step=step)

    def close(self) -> None:
        """Flush and close every sink."""
        if self.tb is not None:
            self.tb.close()
            self.tb = None
        if self.wandb is not None:
            self.wandb.finish()
            self.wandb = None
