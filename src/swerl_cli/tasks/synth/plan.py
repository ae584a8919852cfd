"""Which mutations a synth run tries, in which order, and the train / held-out split by function.

Both are functions of the seed alone: functions are visited in a seeded order; inside a function the mutators
take turns (seeded order, seeded sites) for at most `tries` candidates. The split assigns whole functions: the
functions that produced tasks are shuffled with the seed and the first `round(holdout * n)` of them (at least
one when holdout > 0 and there are two or more) are held out, so no function has tasks in both splits.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from swerl_cli.tasks.synth.mutators import Mutation


def function_key(m: Mutation) -> str:
    """The unit of the split: `path::Qualified.name` of the outermost enclosing function."""
    return f"{m.path}::{m.function}"


def order_candidates(muts: Iterable[Mutation], seed: int, tries: int) -> list[Mutation]:
    """Candidates function by function (seeded order), at most `tries` per function, mutators taking turns."""
    by_fn: dict[str, dict[str, list[Mutation]]] = {}
    for m in muts:
        by_fn.setdefault(function_key(m), {}).setdefault(m.kind, []).append(m)
    rng = random.Random(f"synth-order:{seed}")
    keys = sorted(by_fn)
    rng.shuffle(keys)
    out: list[Mutation] = []
    for key in keys:
        kinds = sorted(by_fn[key])
        rng.shuffle(kinds)
        pools = {}
        for k in kinds:
            sites = sorted(by_fn[key][k], key=lambda m: (m.line, m.source))
            pools[k] = rng.sample(sites, len(sites))
        picked: list[Mutation] = []
        while len(picked) < tries and any(pools.values()):
            for k in kinds:
                if pools[k] and len(picked) < tries:
                    picked.append(pools[k].pop(0))
        out += picked
    return out


def assign_splits(functions: Iterable[str], holdout: float, seed: int) -> dict[str, str]:
    """{function: "train" | "heldout"}; deterministic in (the set of functions, holdout, seed)."""
    keys = sorted(set(functions))
    random.Random(f"synth-split:{seed}").shuffle(keys)
    n = round(holdout * len(keys))
    if holdout > 0 and n == 0 and len(keys) >= 2:
        n = 1
    n = min(n, len(keys) - 1) if holdout < 1 else len(keys)
    return {k: ("heldout" if i < n else "train") for i, k in enumerate(keys)}
