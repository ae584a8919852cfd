"""Record selection for `swerl filter`: record-wise predicates, `--where` expressions and per-group rules.

Order of application (documented in `swerl filter --help` and docs/records.md):
1. group statistics (`--group-mixed`, `--solve-rate`) are computed over EVERY record of a group as read, so
   `--solve-rate 0.2:0.8 --resolved` keeps the resolved samples of medium-difficulty tasks;
2. record-wise rules (`--status`, `--resolved`, `--exit-status`, `--max-turns`, `--max-tokens`, `--min-reward`,
   `--where`) decide each record;
3. `--dedupe` then `--per-task` run over the surviving records of the group, in input order.

A group is the records sharing (`run`, `instance_id`), the run compared as text (streams.graded.group_key: run 1 and
"1" are one group, as in `swerl dapo`). Kept records are written as their original bytes, in
input order, so unknown fields pass through byte-for-byte.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from swerl_cli.core.errors import InputError
from swerl_cli.filtering.lines import FilterResult, Line, Write, load_line, stream_records, whole_line
from swerl_cli.filtering.spec import FieldError, field_getter
from swerl_cli.filtering.spec import FilterSpec as FilterSpec  # re-exported: select is filter's library API
from swerl_cli.filtering.spec import build_predicate as build_predicate
from swerl_cli.filtering.spec import parse_solve_rate as parse_solve_rate
from swerl_cli.streams.graded import GroupKey, group_key
from swerl_cli.streams.jsonl import STDIN, bounded_lines, iter_raw, iter_raw_fh
from swerl_cli.streams.records import (
    Located,
    UniqueIds,
    wrong_type,
)


# ---------------------------------------------------------------- group rules
class _GroupStats:
    """Facts about a whole group: distinct non-null rewards, and resolved counts over non-error samples."""

    __slots__ = ("rewards", "n_graded", "n_resolved")

    def __init__(self) -> None:
        self.rewards: set[float] = set()
        self.n_graded = 0
        self.n_resolved = 0

    def add(self, o: dict, spec: FilterSpec, get_reward: Callable[[dict], Any]) -> None:
        if spec.group_mixed:
            r = get_reward(o)
            if r is not None and len(self.rewards) < 2:
                self.rewards.add(r)
        if spec.solve_rate is not None:
            status = o.get("grade", {}).get("status") if type(o.get("grade")) is dict else None
            if status != "error":  # infra errors say nothing about difficulty
                self.n_graded += 1
                self.n_resolved += _RESOLVED(o)

    def passes(self, spec: FilterSpec) -> bool:
        if spec.group_mixed and len(self.rewards) < 2:
            return False
        if spec.solve_rate is not None:
            if self.n_graded == 0:
                return False
            lo, hi = spec.solve_rate
            return lo <= self.n_resolved / self.n_graded <= hi
        return True


_RESOLVED = field_getter("grade.resolved", bool)


class _Selector:
    """In-order selection inside one group: `--dedupe` (same patch seen before) then `--per-task`."""

    __slots__ = ("seen", "kept")

    def __init__(self) -> None:
        self.seen: set[bytes] = set()
        self.kept = 0

    def take(self, o: dict, spec: FilterSpec) -> bool:
        if spec.per_task is not None and self.kept >= spec.per_task:
            return False
        if spec.dedupe:
            patch = o["patch"] if "patch" in o else o.get("model_patch")
            if patch is not None and type(patch) is not str:
                raise FieldError("patch", wrong_type("string", patch))
            if patch is None and "patch" not in o and "model_patch" not in o:
                raise FieldError("patch", "missing")
            digest = hashlib.blake2b((patch or "").encode(), digest_size=16).digest()
            if digest in self.seen:
                return False
            self.seen.add(digest)
        self.kept += 1
        return True


# ---------------------------------------------------------------- drivers
class _Unsorted(Exception):
    """A group key reappeared after its group was closed."""

    def __init__(self, name: str, n: int, key: GroupKey):
        super().__init__(f"{name}:{n}")
        self.name, self.n, self.key = name, n, key


def _grouped(lines: Iterable[Line], spec: FilterSpec, pred: Any, write: Write, res: FilterResult) -> None:
    """Group rules over input grouped by (run, instance_id): one group in memory at a time."""
    get_reward = field_getter(spec.reward_field, float, nullable=True)
    closed: set[GroupKey] = set()
    key: GroupKey | None = None
    buf: list[tuple[str, int, bytes, dict]] = []
    ids = UniqueIds()

    def flush() -> None:
        stats = _GroupStats()
        for name, n, _, o in buf:
            _located(name, n, stats.add, o, spec, get_reward)
        if not stats.passes(spec):
            return
        sel = _Selector()
        for name, n, raw, o in buf:
            if (pred is None or _located(name, n, pred, o)) and _located(name, n, sel.take, o, spec):
                write(whole_line(raw))
                res.kept += 1

    for name, n, raw in lines:
        res.read += 1
        o = load_line(name, n, raw, ids)
        k = group_key(Located(name, n, o))
        if k != key:
            if buf:
                flush()
                closed.add(key)  # type: ignore[arg-type]
            if k in closed:
                raise _Unsorted(name, n, k)
            key, buf = k, []
        buf.append((name, n, raw, o))
    if buf:
        flush()


def _two_pass(
    open_lines: Callable[[], Iterator[Line]], spec: FilterSpec, pred: Any, write: Write, res: FilterResult
) -> None:
    """Group rules over input in any order: pass 1 gathers per-group facts, pass 2 selects in input order."""
    get_reward = field_getter(spec.reward_field, float, nullable=True)
    stats: dict[GroupKey, _GroupStats] = {}
    if spec.needs_group_stats:
        for name, n, raw in open_lines():
            o = load_line(name, n, raw)
            k = group_key(Located(name, n, o))
            st = stats.get(k) or stats.setdefault(k, _GroupStats())
            _located(name, n, st.add, o, spec, get_reward)
    selectors: dict[GroupKey, _Selector] = {}
    res.read = res.kept = 0
    res.two_pass = True
    ids = UniqueIds()
    for name, n, raw in open_lines():
        res.read += 1
        o = load_line(name, n, raw, ids)
        k = group_key(Located(name, n, o))
        if spec.needs_group_stats and not stats[k].passes(spec):
            continue
        if pred is not None and not _located(name, n, pred, o):
            continue
        sel = selectors.get(k) or selectors.setdefault(k, _Selector())
        if _located(name, n, sel.take, o, spec):
            write(whole_line(raw))
            res.kept += 1


def _located(name: str, n: int, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except FieldError as e:
        raise InputError(name, n, e.field, e.message) from None


class _Tee:
    """Iterate a binary file's lines while copying every byte to a spool (stdin can only be read once)."""

    def __init__(self, fh: IO[bytes], spool: IO[bytes]):
        self.fh, self.spool = fh, spool

    def __iter__(self) -> Iterator[bytes]:
        for raw in bounded_lines(self.fh):  # a line without end is one error, not all of memory
            self.spool.write(raw)
            yield raw


def filter_stream(src: str, spec: FilterSpec, write: Write) -> FilterResult:
    """Filter the records of `src` (path or `-`) and pass each kept line (original bytes) to `write`.

    Record-wise rules stream. Group rules with `spec.grouped` stream one group at a time and reject a key that
    reappears; otherwise groups are decided one at a time into a spool that is written out at the end, and a
    reappearing key switches to a correct two-pass strategy (re-reading the file, or a spooled copy of stdin).
    """
    pred = build_predicate(spec)
    res = FilterResult()
    if not spec.has_group_rules:
        stream_records(iter_raw(src), pred, write, res)
        return res
    if spec.grouped:
        try:
            _grouped(iter_raw(src), spec, pred, write, res)
        except _Unsorted as u:
            raise InputError(
                u.name,
                u.n,
                "instance_id",
                f"group {_fmt_key(u.key)} reappears after its group ended; "
                "input is not grouped by (run, instance_id): drop --grouped to handle any order",
            ) from None
        return res
    import sys

    with tempfile.TemporaryFile() as in_spool, tempfile.TemporaryFile() as out_spool:
        if src == STDIN:
            name = "<stdin>"
            lines = iter_raw_fh(_Tee(sys.stdin.buffer, in_spool), name)
        else:
            lines = iter_raw(src)
        try:
            _grouped(lines, spec, pred, out_spool.write, res)
        except _Unsorted:
            for _ in lines:  # finish reading (and spooling) the input
                pass

            def reopen() -> Iterator[Line]:
                if src != STDIN:
                    return iter_raw(src)
                in_spool.seek(0)
                return iter_raw_fh(in_spool, name)

            _two_pass(reopen, spec, pred, write, res)
            return res
        out_spool.seek(0)
        for raw in out_spool:
            write(raw)
    return res


def _fmt_key(key: GroupKey) -> str:
    run, iid = key
    return f"(run={run!r}, instance_id={iid!r})"
