"""DapoConfig: every knob of one DAPO update, paper defaults (Stage 1, Table 3), validated with a remedy.

Kept free of torch so `swerl dapo --help` and the advantage math stay light.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from swerl_cli.core.config import flag
from swerl_cli.core.errors import ConfigError
from swerl_cli.training.losses import check_loss
from swerl_cli.training.losses.dapo import DapoOptions
from swerl_cli.training.losses.offpolicy import IpoOptions, MisOptions, TisOptions
from swerl_cli.training.train_config import TrainConfig, at_least

STD_KINDS = ("population", "sample")
OLD_LOGPROBS = ("auto", "trainer", "sampler")
STEP_FILLS = ("groups", "samples")
TOKEN_NORMS = ("step", "iteration")
# The loss options are declared on their losses (training/losses); these flags take their defaults from there.
_CAP, _FLOOR, _IPO_EPS = TisOptions.default("is_cap"), MisOptions.default("is_floor"), IpoOptions.default("ipo_eps")


@dataclass(frozen=True, slots=True)
class DapoConfig(TrainConfig):
    """One iteration's DAPO update. Field names are the CLI flags with '-' for '_'; the paths (model: checkpoint k,
    output: checkpoint k+1, metrics) and the optimizer/engine fields (AdamW 0.9/0.999/1e-8, weight decay 0.1, clip
    1.0, ZeRO, dtype, attention, SP) come from TrainConfig."""

    model: str = flag("", "Checkpoint k: the policy that sampled the rollouts.", names=("--model", "-m"))
    output: str = flag("", "Directory for checkpoint k+1 (written atomically).", names=("--output", "-o"))
    # Objective (paper Eq. 2-4, 8; Table 3 Stage 1).
    eps_low: float = flag(DapoOptions.default("eps_low"), "Lower clip bound eps_low (paper 0.2).")
    eps_high: float = flag(
        DapoOptions.default("eps_high"), "Upper clip bound eps_high (paper 0.3 stage 1, 0.26 stage 2)."
    )
    # G: samples per (run, instance_id); collect --samples G
    group_size: int = flag(10, "G, samples per task the run collected (>= 2; paper 10).")
    l_thr: int = flag(10, "Turn count from which the step penalty applies (paper 10).")
    # the penalty reaches -1 at t_max
    t_max: int = flag(40, "The run's max turns (collect --max-turns; paper 40, then 80).")
    # population (ddof 0) or sample (ddof 1); paper silent
    std: str = flag("population", "Group std: population or sample.")
    adv_delta: float = flag(1e-6, "delta in (R - mean) / (std + delta).")  # paper silent
    # pi_old: recomputed by the trainer before the update, the sampler's, or auto (dapo_old.py decides)
    old_logprobs: str = flag(
        "auto",
        "pi_old logprobs: trainer (recomputed), sampler (recorded), or auto: sampler when every kept turn has them "
        "and the gap the previous update logged is below --old-logprobs-max-gap.",
    )
    old_logprobs_max_gap: float = flag(1e-3, "auto: largest logged mean |trainer - sampler| logprob gap for sampler.")
    step_fill: str = flag("groups", "Optimizer steps hold whole groups (groups) or shuffled samples (samples).")
    init_optimizer: str | None = flag(
        None, "When checkpoint k carries no AdamW state: take the moments saved by `rft --save-optimizer` in DIR."
    )
    init_optimizer_keep: str = flag(  # second: Adam's step scale without RFT's momentum continuing
        "both", "--init-optimizer: keep both Adam moments (both) or only the second (second; the first zeroed)."
    )
    # normalise by the action tokens of each optimizer step's batch, or of the iteration
    token_norm: str = flag("step", "Loss normaliser: action tokens of each step, or of the iteration.")
    # Loss (training/losses): dapo (the paper's) or an off-policy correction beside it: tis, mis, ipo.
    loss: str = flag("dapo", "Loss: dapo (the paper's), or an off-policy correction beside it: tis, mis, ipo.")
    is_cap: float = flag(_CAP, f"tis: cap of the weight pi_old/pi_infer; mis: mask above it ({_CAP}).")
    is_floor: float = flag(_FLOOR, f"mis: mask tokens whose weight pi_old/pi_infer is below it ({_FLOOR}).")
    ipo_eps: float = flag(_IPO_EPS, f"ipo: mask tokens with |pi_train - pi_infer| above this ({_IPO_EPS}).")
    # Optimisation (paper: lr 1e-6 constant, AdamW 0.9/0.999/1e-8, wd 0.1, clip 1.0, 1 epoch).
    lr: float = flag(1e-6, "Learning rate (paper 1e-6, constant).")
    adam_eps: float = flag(1e-8, "AdamW eps (paper silent; 1e-8 is torch's).")
    batch_size: int = flag(128, "Trajectories per optimizer step (paper 128, then 256).")
    # the gradient accumulation unit
    micro_batch_tokens: int = flag(16384, "Token budget of one packed forward/backward.")
    max_seq_len: int = flag(65536, "Longest trajectory sequence accepted, in tokens.")
    seed: int = flag(0, "Seed for the step split and the engine.")
    carry_optimizer: bool = flag(True, "Load/save AdamW state beside the checkpoints so it persists across iterations.")
    # Guard rails.
    allow_biased_sampling: bool = flag(
        False, "Train on rollouts sampled with truncation or temperature != 1 (biased ratio)."
    )
    allow_mixed_versions: bool = flag(False, "Train on rollouts of several policy versions (off-policy).")
    rerender: bool = flag(False, "Re-render with the chat template when token ids cannot be used.")
    skip_unrebuildable: bool = flag(  # counted in counts.samples_skipped_unrebuildable
        False, "Drop (and count) trajectories whose token ids cannot be rebuilt (prefix_ok false)."
    )
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
        at_least(bad, 0, l_thr=self.l_thr)
        if self.t_max <= self.l_thr:
            raise bad(
                "t_max",
                f"{self.t_max} must exceed l_thr {self.l_thr} (the penalty divides by t_max - l_thr); "
                "set --t-max to collect's --max-turns",
            )
        for name, value, allowed in (
            ("std", self.std, STD_KINDS),
            ("old_logprobs", self.old_logprobs, OLD_LOGPROBS),
            ("step_fill", self.step_fill, STEP_FILLS),
            ("init_optimizer_keep", self.init_optimizer_keep, ("both", "second")),
            ("token_norm", self.token_norm, TOKEN_NORMS),
        ):
            if value not in allowed:
                raise bad(name, f"unknown value {value!r}; choose one of {', '.join(allowed)}")
        self._check_loss(bad)
        if self.adv_delta <= 0:
            raise bad("adv_delta", f"must be > 0 so all-equal groups give advantage 0, got {self.adv_delta}")
        at_least(bad, 1, batch_size=self.batch_size, micro_batch_tokens=self.micro_batch_tokens)
        TrainConfig.validate(self, "dapo")
        if self.old_logprobs_max_gap < 0:
            raise bad("old_logprobs_max_gap", f"must be >= 0, got {self.old_logprobs_max_gap}")
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
