"""DapoConfig: every knob of one DAPO update, paper defaults (Stage 1, Table 3), validated with a remedy.

Kept free of torch so `swerl dapo --help` and the advantage math stay light.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from swerl_cli.core.errors import ConfigError
from swerl_cli.training.losses.base import check_loss
from swerl_cli.training.train_config import TrainConfig

STD_KINDS = ("population", "sample")
OLD_LOGPROBS = ("trainer", "sampler")
TOKEN_NORMS = ("step", "iteration")


@dataclass(frozen=True, slots=True)
class DapoConfig(TrainConfig):
    """One iteration's DAPO update. Field names are the CLI flags with '-' for '_'; the paths (model: checkpoint k,
    output: checkpoint k+1, metrics) and the optimizer/engine fields (AdamW 0.9/0.999/1e-8, weight decay 0.1, clip
    1.0, ZeRO, dtype, attention, SP) come from TrainConfig."""

    # Objective (paper Eq. 2-4, 8; Table 3 Stage 1).
    eps_low: float = 0.2
    eps_high: float = 0.3
    group_size: int = 10  # G: samples per (run, instance_id); collect --samples G
    l_thr: int = 10  # turns from which the step penalty applies
    t_max: int = 40  # the run's max turns (collect --max-turns): penalty reaches -1 there
    std: str = "population"  # group std: population (ddof 0) or sample (ddof 1); paper silent
    adv_delta: float = 1e-6  # delta in (R - mean) / (std + delta); paper silent
    old_logprobs: str = "trainer"  # pi_old: recomputed by the trainer before the update, or the sampler's
    token_norm: str = "step"  # normalise by the action tokens of each optimizer step's batch, or of the iteration
    # Loss (training/losses): dapo (the paper's) or an off-policy correction beside it: tis, mis, ipo.
    loss: str = "dapo"
    is_cap: float = 2.0  # tis: importance weight pi_old/pi_infer capped here; mis: tokens above it masked
    is_floor: float = 0.5  # mis: tokens whose importance weight is below this are masked
    ipo_eps: float = 0.3  # ipo: tokens with |pi_train - pi_infer| > ipo_eps are masked
    # Optimisation (paper: lr 1e-6 constant, AdamW 0.9/0.999/1e-8, wd 0.1, clip 1.0, 1 epoch).
    lr: float = 1e-6
    batch_size: int = 128  # trajectories per optimizer step (Stage 2: 256)
    micro_batch_tokens: int = 16384  # token budget of one packed forward/backward (gradient accumulation unit)
    carry_optimizer: bool = True  # load/save AdamW state beside the checkpoint so moments persist across iterations
    # Guard rails.
    allow_biased_sampling: bool = False
    allow_mixed_versions: bool = False
    rerender: bool = False  # re-render with the chat template when token ids cannot be rebuilt (prefix_ok false)
    skip_unrebuildable: bool = False  # or drop such trajectories and count them (counts.samples_skipped_unrebuildable)
    logprob_diff_warn: float = 0.1  # warn when mean |logp_trainer - logp_sampler| exceeds this ...
    logprob_diff_jump: float = 2.0  # ... or exceeds this factor times the previous iteration's value
    shuffle: bool = True  # shuffle kept samples before splitting them into optimizer steps

    def __post_init__(self) -> None:
        def bad(field: str, msg: str) -> ConfigError:
            return ConfigError(f"dapo config: field '{field}': {msg}")

        if not 0.0 < self.eps_low < 1.0:
            raise bad("eps_low", f"must be in (0, 1), got {self.eps_low}; the paper uses 0.2")
        if self.eps_high < self.eps_low:
            raise bad(
                "eps_high",
                f"{self.eps_high} < eps_low {self.eps_low}: clip-higher needs eps_high >= eps_low "
                "(paper: 0.3 in stage 1, 0.26 in stage 2); raise --eps-high or lower --eps-low",
            )
        if self.group_size < 2:
            raise bad(
                "group_size", f"must be >= 2 to compute group advantages, got {self.group_size}; use --group-size 10"
            )
        if self.l_thr < 0:
            raise bad("l_thr", f"must be >= 0, got {self.l_thr}")
        if self.t_max <= self.l_thr:
            raise bad(
                "t_max",
                f"{self.t_max} must exceed l_thr {self.l_thr} (the penalty divides by t_max - l_thr); "
                "set --t-max to collect's --max-turns",
            )
        for name, value, allowed in (
            ("std", self.std, STD_KINDS),
            ("old_logprobs", self.old_logprobs, OLD_LOGPROBS),
            ("token_norm", self.token_norm, TOKEN_NORMS),
        ):
            if value not in allowed:
                raise bad(name, f"unknown value {value!r}; choose one of {', '.join(allowed)}")
        self._check_loss(bad)
        if self.adv_delta <= 0:
            raise bad("adv_delta", f"must be > 0 so all-equal groups give advantage 0, got {self.adv_delta}")
        if self.batch_size < 1:
            raise bad("batch_size", f"must be >= 1, got {self.batch_size}")
        if self.micro_batch_tokens < 1:
            raise bad("micro_batch_tokens", f"must be >= 1, got {self.micro_batch_tokens}")
        TrainConfig.validate(self, "dapo")
        if self.logprob_diff_warn < 0 or self.logprob_diff_jump < 1:
            raise bad("logprob_diff_warn", "needs logprob_diff_warn >= 0 and logprob_diff_jump >= 1")

    def _check_loss(self, bad: Callable[[str, str], ConfigError]) -> None:
        check_loss(self.loss, "dapo")
        if self.is_cap < 1.0:
            raise bad("is_cap", f"must be >= 1 (a cap below 1 down-weights on-policy tokens), got {self.is_cap}")
        if not 0.0 <= self.is_floor <= 1.0:
            raise bad("is_floor", f"must be in [0, 1], got {self.is_floor}")
        if not 0.0 < self.ipo_eps <= 1.0:
            raise bad("ipo_eps", f"must be in (0, 1] (a probability difference), got {self.ipo_eps}; prime-rl uses 0.3")
        if self.loss in ("tis", "mis") and self.old_logprobs == "sampler":
            raise bad(
                "loss",
                f"{self.loss} weighs pi_old / pi_infer, which is 1 when pi_old is the sampler's: "
                "use --old-logprobs trainer, or --loss ipo",
            )
