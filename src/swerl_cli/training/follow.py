"""`swerl dapo --follow`: the asynchronous trainer. Graded records stream in; each batch of complete groups is one
DAPO update; the new checkpoint is pushed into the running policy server; groups too stale are dropped, and with
`stale_decay` D < 1 the kept ones are down-weighted by D**staleness (`staleness_weight` on their records).

Layout under OUTPUT (that of `make rl`, so `swerl report` and `make rl-status` read it unchanged):

    iter-n/graded.jsonl   the records update n trained on (its batch of groups)
    iter-n/dapo.json      update n's summary record, plus `staleness` and `follow` counts
    iter-n/metrics.jsonl  its optimizer steps
    iter-(n+1)/ckpt/      the checkpoint it produced (optimizer state inside, for the next update)
    follow_state.json     the commit point: updates done, global step, current checkpoint, the version -> step map,
                          every consumed record id (trained or dropped)

An update is committed when follow_state.json is replaced (atomically) after its checkpoint is complete. A restart
(after `kill -9` at any moment) reads the state, deletes what an uncommitted update left, re-reads the input from
the start and skips consumed ids: no record is trained twice, and none is lost as long as the input is a file the
grader appends to, or a directory of them (a pipe's unread content dies with the process). A writer killed mid-line
leaves a torn last line, never parsed: the follower waits until the restarted writer (`grade -o FILE --resume`)
cuts it and appends whole lines. Each update runs `swerl dapo` as a child
process (killed with its parent), so its numbers are exactly those of the synchronous loop's update.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swerl_cli.core.config import config_to_dict, flag
from swerl_cli.core.errors import SwerlError
from swerl_cli.streams.records import Located
from swerl_cli.training.dapo_config import DapoConfig
from swerl_cli.training.follow_stream import GroupBuffer, group_step, record_id, tail_records, version_key

STATE_FILE = "follow_state.json"
Log = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class FollowOptions:
    model: str  # the starting checkpoint (global step 0)
    output: str  # the run directory
    # Fields with `flag(...)` are options of `swerl dapo --follow` (cli/dapo.py), in this order in its --help.
    max_staleness: int = flag(  # K
        1, "--follow: drop groups sampled more than K optimizer steps before the update (0: on-policy)."
    )
    # a kept group of staleness a is weighted D**a (`staleness_weight` on its records)
    stale_decay: float = flag(
        1.0, "--follow: weight each kept group of staleness a by D**a (advantages scaled; 1: none)."
    )
    groups_per_update: int = flag(1, "--follow: complete fresh groups per update.")  # complete, fresh groups
    push_url: str | None = flag(  # reloaded in place after each update
        None,
        "--follow: vLLM server URL to reload each new checkpoint into (drained, probe-checked).",
        names=("--push",),
    )
    # None: until the input ends
    max_updates: int | None = flag(None, "--follow: stop after this many updates in the run.")
    idle_timeout_s: float | None = flag(
        None, "--follow: a file input ends after this many seconds without a new line.", names=("--idle-timeout",)
    )
    poll_s: float = 0.2


@dataclass(slots=True)
class FollowState:
    updates: int = 0
    global_step: int = 0
    model: str = ""
    versions: dict[str, int] = field(default_factory=dict)
    consumed: list[str] = field(default_factory=list)
    dropped_stale: int = 0  # groups

    def save(self, out: Path) -> None:
        tmp = out / f".{STATE_FILE}.tmp"
        with open(tmp, "w") as fh:
            json.dump({s: getattr(self, s) for s in self.__slots__}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out / STATE_FILE)

    @classmethod
    def load(cls, out: Path, model: str) -> FollowState:
        path = out / STATE_FILE
        if not path.is_file():
            return cls(model=model, versions={version_key(model): 0})
        return cls(**json.loads(path.read_text()))


def _clean_uncommitted(out: Path, st: FollowState) -> None:
    """Remove what an update that never committed left behind (its batch file, summary, checkpoint)."""
    for d in out.glob("iter-*"):
        try:
            k = int(d.name[5:])
        except ValueError:
            continue
        if k > st.updates:
            shutil.rmtree(d, ignore_errors=True)
        elif k == st.updates:
            for name in ("graded.jsonl", "dapo.json", "metrics.jsonl", ".graded.jsonl.tmp", ".dapo.json.tmp"):
                (d / name).unlink(missing_ok=True)


def _kill_with_parent() -> None:
    """preexec_fn: the update dies with the trainer (Linux PR_SET_PDEATHSIG), so a killed trainer leaves no writer."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _write_lines(path: Path, records: list[dict[str, Any]]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    os.replace(tmp, path)


def weighted(batch: list[tuple[list[Located], int]], decay: float) -> list[dict[str, Any]]:
    """The batch's records; with decay < 1 each carries `staleness_weight` = decay ** (its group's staleness)."""
    if decay == 1.0:
        return [m.obj for g, _ in batch for m in g]
    return [{**m.obj, "staleness_weight": decay**age} for g, age in batch for m in g]


def _run_update(out: Path, st: FollowState, batch: list[dict[str, Any]], cfg_file: Path) -> dict[str, Any]:
    """One `swerl dapo` child on the batch: iter-n/ckpt (or the starting model) -> iter-(n+1)/ckpt."""
    n = st.updates
    d, nxt = out / f"iter-{n}", out / f"iter-{n + 1}" / "ckpt"
    d.mkdir(parents=True, exist_ok=True)
    nxt.parent.mkdir(parents=True, exist_ok=True)
    _write_lines(d / "graded.jsonl", batch)
    cmd = [sys.executable, "-m", "swerl_cli", "dapo", str(d / "graded.jsonl"), "--model", st.model]
    cmd += ["--output", str(nxt), "--metrics", str(d / "metrics.jsonl"), "--config", str(cfg_file)]
    cmd += ["--allow-mixed-versions"]
    with open(d / ".dapo.json.tmp", "wb") as fh:
        proc = subprocess.run(cmd, stdout=fh, preexec_fn=_kill_with_parent, check=False)
    if proc.returncode != 0:
        raise SwerlError(f"dapo --follow: update {n} failed (swerl dapo exit {proc.returncode}); see the lines above")
    summary: dict[str, Any] = json.loads((d / ".dapo.json.tmp").read_text())
    return summary


def _push(url: str, ckpt: str, log: Log) -> None:
    from swerl_cli.policy.refresh import reload

    report = reload(url, ckpt, drain=True)
    log(f"dapo --follow: pushed {ckpt} (reload {report['reload_s']} s, probe gap {report['gap_after']:.2g})")


def _staleness(steps: list[int]) -> dict[str, Any]:
    hist: dict[str, int] = {}
    for s in steps:
        hist[str(s)] = hist.get(str(s), 0) + 1
    return {"groups": steps, "mean": sum(steps) / len(steps), "max": max(steps), "hist": hist}


def _commit(out: Path, st: FollowState, batch_groups: list[list[Located]], summary: dict[str, Any]) -> None:
    """Make update n final: its summary in place, the state replaced (the commit point), old optimizer state freed."""
    n = st.updates
    os.replace(out / f"iter-{n}" / ".dapo.json.tmp", out / f"iter-{n}" / "dapo.json")
    nxt = str((out / f"iter-{n + 1}" / "ckpt").resolve())
    st.global_step = int(summary["config"]["dapo"]["global_step"])
    st.versions[version_key(nxt)] = st.global_step
    st.consumed += [record_id(m) for g in batch_groups for m in g]
    prev = st.model
    st.model, st.updates = nxt, n + 1
    st.save(out)
    if n > 0:  # the starting model is the user's: never touch it
        shutil.rmtree(Path(prev) / "optimizer_state", ignore_errors=True)


def _take_batch(buf: GroupBuffer, st: FollowState, opts: FollowOptions) -> list[tuple[list[Located], int]] | None:
    """Drop complete groups older than K steps (consumed, counted); then `groups_per_update` fresh ones, the oldest
    first (in arrival order among equals): a group overtaken by younger ones is trained before it ages out."""
    fresh: list[tuple[list[Located], int]] = []
    for g in buf.ready:
        age = st.global_step - group_step(g, st.versions)
        fresh.append((g, age))
    stale = [g for g, age in fresh if age > opts.max_staleness]
    if stale:
        st.dropped_stale += len(stale)
        st.consumed += [record_id(m) for g in stale for m in g]
        st.save(Path(opts.output))
    fresh = [(g, a) for g, a in fresh if a <= opts.max_staleness]
    buf.ready = [g for g, _ in fresh]
    if len(fresh) < opts.groups_per_update:
        return None
    order = sorted(range(len(fresh)), key=lambda i: -fresh[i][1])  # stable: arrival order among equal ages
    take = order[: opts.groups_per_update]
    buf.ready = [g for i, (g, _) in enumerate(fresh) if i not in take]
    return [fresh[i] for i in take]


def run_follow(src: str, cfg: DapoConfig, opts: FollowOptions, log: Log) -> Iterator[dict[str, Any]]:
    """Train as groups arrive; yields each committed update's summary record."""
    out = Path(opts.output)
    out.mkdir(parents=True, exist_ok=True)
    st = FollowState.load(out, str(Path(opts.model).resolve()) if os.path.isdir(opts.model) else opts.model)
    _clean_uncommitted(out, st)
    cfg_file = out / "dapo-config.json"
    cfg_file.write_text(json.dumps(config_to_dict(cfg)))
    if opts.push_url:  # the server may hold an uncommitted update's weights (killed after its push)
        _push(opts.push_url, st.model, log)
    log(f"dapo --follow: update {st.updates}, global step {st.global_step}, {len(st.consumed)} records consumed")
    buf = GroupBuffer(cfg.group_size, set(st.consumed))

    def done() -> bool:
        return opts.max_updates is not None and st.updates >= opts.max_updates

    for loc in tail_records(src, poll_s=opts.poll_s, idle_timeout_s=opts.idle_timeout_s, stop=done):
        buf.add(loc)
        while not done() and (batch := _take_batch(buf, st, opts)) is not None:
            groups = [g for g, _ in batch]
            summary = _run_update(out, st, weighted(batch, opts.stale_decay), cfg_file)
            summary["staleness"] = {
                **_staleness([a for _, a in batch]),
                "k": opts.max_staleness,
                "decay": opts.stale_decay,
            }
            summary["follow"] = {"update": st.updates, "dropped_stale_groups": st.dropped_stale}
            (out / f"iter-{st.updates}" / ".dapo.json.tmp").write_text(json.dumps(summary) + "\n")
            if opts.push_url:  # before the commit: a collector that sees the new update count samples the new weights
                _push(opts.push_url, str((out / f"iter-{st.updates + 1}" / "ckpt").resolve()), log)
            _commit(out, st, groups, summary)
            yield summary
    if not done():  # the input ended: stdin's EOF, or --idle-timeout seconds without a line
        why = "stdin ended" if src == "-" else f"no new line for {opts.idle_timeout_s:g} s (--idle-timeout)"
        log(f"dapo --follow: {src}: {why}; stopping after {st.updates} updates")


def check_run_dir(opts: FollowOptions) -> None:
    """UsageError unless --output is a directory without iter-*/ folders (the stream file may live there) or a
    --follow run directory (a restart deletes iter-k/ folders past its last commit: never those of another run)."""
    from swerl_cli.core.errors import UsageError

    if opts.max_staleness < 0:
        raise UsageError(f"--max-staleness must be >= 0 (optimizer steps), got {opts.max_staleness}")
    if not 0.0 < opts.stale_decay <= 1.0:
        raise UsageError(f"--stale-decay must be in (0, 1] (1: no down-weighting), got {opts.stale_decay}")
    if opts.groups_per_update < 1:
        raise UsageError(f"--groups-per-update must be >= 1, got {opts.groups_per_update}")
    p = Path(opts.output)
    if p.exists() and (not p.is_dir() or (any(p.glob("iter-*")) and not (p / "dapo-config.json").is_file())):
        raise UsageError(
            f"--output {opts.output} holds iter-*/ folders but is not a --follow run directory (no "
            "dapo-config.json): choose a new directory"
        )
