"""Global batches -> per-rank, token-budget packed micro-batches, and their collation into tensors.

Every rank computes the same plan from the same samples and seed, so no communication is needed to agree on it:

    global batch (batch_size sequences, or >= batch_tokens tokens)
      -> split across ranks, longest sample first to the least-loaded rank
      -> each rank packs its share into micro-batches of <= micro_batch_tokens (first-fit decreasing)
      -> ranks with fewer micro-batches run empty (all-masked) ones so collectives stay in step.

A packed micro-batch is one row (1, T) with position_ids restarting at 0 for each sample; transformers' attention
turns the restarts into a block-diagonal mask (no attention across samples, no padding).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from swerl_cli.training.data import Sample


@dataclass(slots=True)
class StepPlan:
    """One optimizer step: `micro[rank]` is that rank's list of micro-batches (lists of sample indices)."""

    index: int
    micro: list[list[list[int]]]
    n_samples: int
    n_tokens: int
    n_trainable: int

    @property
    def n_micro(self) -> int:
        """Micro-batches each rank runs this step (the max over ranks)."""
        return max(len(m) for m in self.micro)


def split_global_batches(
    samples: list[Sample],
    batch_size: int | None,
    batch_tokens: int | None,
    seed: int,
    shuffle: bool,
    groups: list[int] | None = None,
) -> list[list[int]]:
    """Order (seeded shuffle) and cut sample indices into global batches by sequence count or token count.

    `groups` (a group id per sample, dapo's --step-fill groups): whole groups are shuffled and a batch closes at a
    group boundary, so no group is split across optimizer steps (a step holds at most `batch_size` samples unless
    one group alone is larger).
    """
    if groups is not None:
        return _split_whole_groups(groups, batch_size or 1, seed, shuffle)
    order = list(range(len(samples)))
    if shuffle:
        random.Random(seed).shuffle(order)
    batches: list[list[int]] = []
    cur: list[int] = []
    cur_tokens = 0
    for i in order:
        cur.append(i)
        cur_tokens += len(samples[i])
        full = cur_tokens >= batch_tokens if batch_tokens else len(cur) >= (batch_size or 1)
        if full:
            batches.append(cur)
            cur, cur_tokens = [], 0
    if cur:
        batches.append(cur)
    return batches


def _split_whole_groups(groups: list[int], batch_size: int, seed: int, shuffle: bool) -> list[list[int]]:
    """Whole groups into batches of <= batch_size samples: a group that would overflow the batch starts the next."""
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    order = list(members)  # first appearance: the canonical group order of the selection
    if shuffle:
        random.Random(seed).shuffle(order)
    batches: list[list[int]] = []
    cur: list[int] = []
    for g in order:
        if cur and len(cur) + len(members[g]) > batch_size:
            batches.append(cur)
            cur = []
        cur = cur + members[g]
    if cur:
        batches.append(cur)
    return batches


def pack(lengths: dict[int, int], budget: int) -> list[list[int]]:
    """First-fit decreasing bin packing of sample indices into bins of <= budget tokens (a longer sample: own bin)."""
    bins: list[list[int]] = []
    room: list[int] = []
    for i in sorted(lengths, key=lambda j: (-lengths[j], j)):
        n = lengths[i]
        for b, r in enumerate(room):
            if n <= r:
                bins[b].append(i)
                room[b] -= n
                break
        else:
            bins.append([i])
            room.append(budget - n)
    return bins


def plan_steps(
    samples: list[Sample],
    *,
    world_size: int,
    micro_batch_tokens: int,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    seed: int = 0,
    shuffle: bool = True,
    epochs: int = 1,
    groups: list[int] | None = None,
) -> list[StepPlan]:
    """The whole run's schedule, identical on every rank (`groups`: whole groups per step, split_global_batches)."""
    plans: list[StepPlan] = []
    for epoch in range(epochs):
        for batch in split_global_batches(samples, batch_size, batch_tokens, seed + epoch, shuffle, groups):
            shares: list[list[int]] = [[] for _ in range(world_size)]
            load = [0] * world_size
            for i in sorted(batch, key=lambda j: (-len(samples[j]), j)):
                r = min(range(world_size), key=lambda k: (load[k], k))
                shares[r].append(i)
                load[r] += len(samples[i])
            micro = [pack({i: len(samples[i]) for i in share}, micro_batch_tokens) for share in shares]
            plans.append(
                StepPlan(
                    index=len(plans),
                    micro=micro,
                    n_samples=len(batch),
                    n_tokens=sum(len(samples[i]) for i in batch),
                    n_trainable=sum(samples[i].n_trainable for i in batch),
                )
            )
    return plans


def rank_micro_batches(plan: StepPlan, samples: list[Sample], dp_rank: int, pad_token_id: int) -> list[PackedBatch]:
    """This data-parallel rank's packed micro-batches of one step, padded with empty rows to the step's count.

    Every rank runs `plan.n_micro` forward/backward passes (ZeRO's collectives run per pass), whatever its share:
    a rank with fewer micro-batches, or none at all, runs fully masked 1-token rows that add nothing to the loss.
    """
    mine = [collate([samples[i] for i in mb], pad_token_id) for mb in plan.micro[dp_rank]]
    return mine + [collate([], pad_token_id) for _ in range(plan.n_micro - len(mine))]


@dataclass(slots=True)
class PackedBatch:
    """One packed row. Tensors are (1, T); `sample_index[0, t]` says which of `samples` token t belongs to."""

    input_ids: Any
    position_ids: Any
    loss_mask: Any
    old_logprobs: Any
    sample_index: Any
    samples: list[Sample] = field(default_factory=list)

    @property
    def n_tokens(self) -> int:
        """Tokens in the row (no padding, so all of them are real)."""
        return int(self.input_ids.shape[1])

    def to(self, device: Any) -> PackedBatch:
        """Move the tensors to `device`."""
        return PackedBatch(
            self.input_ids.to(device),
            self.position_ids.to(device),
            self.loss_mask.to(device),
            self.old_logprobs.to(device),
            self.sample_index.to(device),
            self.samples,
        )


def collate(samples: list[Sample], pad_token_id: int = 0) -> PackedBatch:
    """Concatenate samples into one (1, T) row; an empty list gives a 1-token, fully masked dummy row."""
    import torch

    if not samples:
        zero_l = torch.zeros((1, 1), dtype=torch.long)
        zero_f = torch.zeros((1, 1), dtype=torch.float32)
        return PackedBatch(zero_l + pad_token_id, zero_l.clone(), zero_f, zero_f.clone(), zero_l - 1, [])
    ids: list[int] = []
    pos: list[int] = []
    mask: list[int] = []
    lps: list[float] = []
    idx: list[int] = []
    for k, s in enumerate(samples):
        ids += s.input_ids
        pos += range(len(s))
        mask += s.loss_mask
        lps += s.logprobs
        idx += [k] * len(s)

    def row(values: list, dtype: Any) -> Any:
        return torch.tensor(values, dtype=dtype).unsqueeze(0)

    return PackedBatch(
        row(ids, torch.long),
        row(pos, torch.long),
        row(mask, torch.float32),
        row(lps, torch.float32),
        row(idx, torch.long),
        list(samples),
    )
