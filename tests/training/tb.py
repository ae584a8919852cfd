"""Read TensorBoard event files back with TensorBoard's own reader (tests only)."""

from __future__ import annotations

from pathlib import Path


def read_scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """{tag: [(step, value), ...] in step order} over every event file under `logdir`."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out: dict[str, list[tuple[int, float]]] = {}
    files = sorted(logdir.rglob("events.out.tfevents.*"))
    assert files, f"no event files under {logdir}"
    for f in files:
        acc = EventAccumulator(str(f), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            out.setdefault(tag, []).extend((e.step, e.value) for e in acc.Scalars(tag))
    return {k: sorted(v) for k, v in out.items()}
