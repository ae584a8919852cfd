"""What a training checkpoint carries beside its weights, and how the next DAPO update reads it.

    OUTPUT/swerl_run_config.json   the run's config, world size, and (dapo) the update's logprob gap and global step
    OUTPUT/optimizer_state/        (dapo, carry_optimizer; rft --save-optimizer) the AdamW moments, a DeepSpeed
                                   checkpoint

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

    def load_optimizer_state(self, engine: Any, cfg: DapoConfig, log: Callable[[str], None]) -> str:
        """Restore the AdamW moments saved beside checkpoint k (carry_optimizer; same world size only), else those
        `rft --save-optimizer` saved in `cfg.init_optimizer` (moments only: the weights stay checkpoint k's). The
        hyperparameters stay this run's (`cfg`). Returns where the optimizer started: checkpoint, init (init-second:
        `init_optimizer_keep second`, the first moment zeroed) or fresh."""
        state = Path(self.model) / OPTIMIZER_STATE_DIR
        if cfg.carry_optimizer and (state / "latest").is_file() and self._same_world(state, self.world_size, log):
            _load(engine, state, moments_only=False)
            start = "checkpoint"
        elif cfg.init_optimizer:
            init = Path(cfg.init_optimizer) / OPTIMIZER_STATE_DIR
            if not (init / "latest").is_file():
                raise ConfigError(
                    f"--init-optimizer {cfg.init_optimizer}: no {OPTIMIZER_STATE_DIR}/ there; train it with "
                    "`swerl rft --save-optimizer`"
                )
            if not self._same_world(init, PriorRun.read(cfg.init_optimizer).world_size, log):
                return "fresh"
            _load(engine, init, moments_only=True)
            start = "init"
            if cfg.init_optimizer_keep == "second":
                _zero_first_moment(engine)
                start = "init-second"
        else:
            return "fresh"
        for group in engine.engine.optimizer.param_groups:  # this run's hyperparameters, not the saved ones
            group.update(
                lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps
            )
        return start

    @staticmethod
    def _same_world(state: Path, saved_world: Any, log: Callable[[str], None]) -> bool:
        from swerl_cli.training import dist

        if saved_world == dist.world_size():
            return True
        log(f"dapo: optimizer state in {state} was saved by {saved_world} ranks, this run has {dist.world_size()}: "
            "starting fresh")  # fmt: skip
        return False


def _load(engine: Any, state: Path, moments_only: bool) -> None:
    """DeepSpeed-load the optimizer state under `state`. `moments_only`: keep the engine's weights (no module load,
    and ZeRO's fp32 master copy rebuilt from them, not read from the checkpoint)."""
    ds = engine.engine
    zero = ds._config.zero_config
    keep = zero.load_from_fp32_weights
    if moments_only:
        zero.load_from_fp32_weights = False
    try:
        path, _ = ds.load_checkpoint(
            str(state), load_optimizer_states=True, load_lr_scheduler_states=False, load_module_strict=True,
            custom_load_fn=(lambda **_kw: None) if moments_only else None,
        )  # fmt: skip
    finally:
        zero.load_from_fp32_weights = keep
    if path is None:
        raise ConfigError(f"{state}: optimizer state could not be loaded; delete it or pass --no-carry-optimizer")


def _zero_first_moment(engine: Any) -> None:
    """Zero Adam's first moment (exp_avg) in every parameter's state: the step keeps the carried second moment's
    scale but none of the previous run's direction."""
    opt = engine.engine.optimizer
    inner = getattr(opt, "optimizer", opt)  # ZeRO wraps the client optimizer; stage 0 steps it as is
    for state in inner.state.values():
        if "exp_avg" in state:
            state["exp_avg"].zero_()
