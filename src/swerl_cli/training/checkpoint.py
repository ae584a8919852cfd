"""What a training checkpoint carries beside its weights, and how the next DAPO update reads it.

    OUTPUT/swerl_run_config.json   the run's config, world size, and (dapo) the update's logprob gap and global step
    OUTPUT/optimizer_state/        (dapo, carry_optimizer) the AdamW moments, a DeepSpeed checkpoint

`PriorRun.read(model)` reads checkpoint k's run config once; the update takes the previous logprob gap, the global
step count and the saved optimizer state (`load_optimizer_state`, same world size only) from that one object.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swerl_cli.core.errors import ConfigError
from swerl_cli.training.dapo_config import DapoConfig

RUN_CONFIG_FILE = "swerl_run_config.json"
OPTIMIZER_STATE_DIR = "optimizer_state"  # DeepSpeed checkpoint (AdamW moments) saved inside checkpoint k+1


@dataclass(frozen=True, slots=True)
class PriorRun:
    """Checkpoint k's run config as the next update needs it (defaults: a model no swerl run produced)."""

    model: str  # checkpoint k's directory (or hub name)
    logprob_diff: float | None = None  # the trainer-vs-sampler logprob gap the update that produced it measured
    global_step: int = 0  # optimizer steps of the whole RL run up to this checkpoint
    world_size: int | None = None  # ranks that saved its optimizer state

    @classmethod
    def read(cls, model: str) -> PriorRun:
        """Read `model`/swerl_run_config.json once; an absent or unreadable file gives the defaults."""
        try:
            cfg = json.loads((Path(model) / RUN_CONFIG_FILE).read_text())
        except (OSError, ValueError):
            return cls(model)
        if not isinstance(cfg, dict):
            return cls(model)
        dapo = cfg.get("dapo")
        dapo = dapo if isinstance(dapo, dict) else {}
        diff, step = dapo.get("logprob_diff"), dapo.get("global_step")
        return cls(
            model,
            logprob_diff=float(diff) if isinstance(diff, (int, float)) else None,
            global_step=step if isinstance(step, int) and not isinstance(step, bool) else 0,
            world_size=cfg.get("world_size"),
        )

    def load_optimizer_state(self, engine: Any, cfg: DapoConfig, log: Callable[[str], None]) -> bool:
        """Restore the AdamW moments the previous update saved beside checkpoint k (same world size only); the
        hyperparameters stay this run's (`cfg`). True when state was carried."""
        from swerl_cli.training import dist

        state = Path(self.model) / OPTIMIZER_STATE_DIR
        if not cfg.carry_optimizer or not (state / "latest").is_file():
            return False
        world = dist.world_size()
        if self.world_size != world:
            log(
                f"dapo: optimizer state in {state} was saved by {self.world_size} ranks, this run has {world}: "
                "starting fresh"
            )
            return False
        path, _ = engine.engine.load_checkpoint(
            str(state), load_optimizer_states=True, load_lr_scheduler_states=False, load_module_strict=True
        )
        if path is None:
            raise ConfigError(f"{state}: optimizer state could not be loaded; delete it or pass --no-carry-optimizer")
        for group in engine.engine.optimizer.param_groups:  # this run's hyperparameters, not the saved ones
            group.update(
                lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps
            )
        return True
