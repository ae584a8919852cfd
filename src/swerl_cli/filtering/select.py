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
from dataclasses import dataclass
from typing import IO, Any

import orjson

from swerl_cli.core.errors import ConfigError, InputError
from swerl_cli.filtering.expr import compile_expr, path_getter
from swerl_cli.streams.graded import GroupKey, group_key
from swerl_cli.streams.jsonl import STDIN, iter_raw, iter_raw_fh, parse_raw
from swerl_cli.streams.records import (
    EXIT_STATUSES,
    GRADE_STATUSES,
    KNOWN_VERSIONS,
    Located,
    UniqueIds,
    check_schema,
    record_id,
    type_check,
    wrong_type,
)

Write = Callable[[bytes], Any]
Line = tuple[str, int, bytes]


class FieldError(Exception):
    """A field a rule needs has the wrong type; the caller adds the file and line."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


@dataclass(frozen=True, slots=True)
class FilterSpec:
    """Every `swerl filter` rule; empty/None means the rule is off."""

    status: tuple[str, ...] = ()
    resolved: bool | None = None
    exit_status: tuple[str, ...] = ()
    max_turns: int | None = None
    max_tokens: int | None = None
    min_reward: float | None = None
    where: str | None = None
    group_mixed: bool = False
    reward_field: str = "grade.reward"
    solve_rate: tuple[float, float] | None = None
    dedupe: bool = False
    per_task: int | None = None
    grouped: bool = False

    def __post_init__(self) -> None:
        for s in self.status:
            if s not in GRADE_STATUSES:
                raise ConfigError(f"--status: unknown grade status {s!r}; use one of {', '.join(GRADE_STATUSES)}")
        for s in self.exit_status:
            if s not in EXIT_STATUSES:
                raise ConfigError(f"--exit-status: unknown exit status {s!r}; use one of {', '.join(EXIT_STATUSES)}")
        if self.per_task is not None and self.per_task < 1:
            raise ConfigError(f"--per-task: must be >= 1 (keep at most N records per task); got {self.per_task}")
        for name in ("max_turns", "max_tokens"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(f"--{name.replace('_', '-')}: must be >= 0; got {value}")
        if self.solve_rate is not None:
            lo, hi = self.solve_rate
            if not 0.0 <= lo <= hi <= 1.0:
                raise ConfigError(f"--solve-rate: need 0 <= LO <= HI <= 1 (fractions, e.g. 0.2:0.8); got {lo}:{hi}")
        if self.where is not None:
            compile_expr(self.where)  # syntax errors surface before any input is read

    @property
    def needs_group_stats(self) -> bool:
        """Rules that must see a whole group before deciding any of its records."""
        return self.group_mixed or self.solve_rate is not None

    @property
    def has_group_rules(self) -> bool:
        """Any rule that depends on other records of the same (run, instance_id) group."""
        return self.needs_group_stats or self.dedupe or self.per_task is not None


def parse_solve_rate(text: str) -> tuple[float, float]:
    """`parse_solve_rate("0.2:0.8") == (0.2, 0.8)`; bounds are inclusive fractions."""
    lo, sep, hi = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return float(lo), float(hi)
    except ValueError:
        raise ConfigError(f"--solve-rate: expected LO:HI fractions such as 0.2:0.8, got {text!r}") from None


# ---------------------------------------------------------------- record-wise rules
def _field(path: str, expected: type, nullable: bool = False) -> Callable[[dict], Any]:
    """A getter that raises FieldError when the value at `path` is missing or not of type `expected`."""
    get = path_getter(path)
    check, name = type_check(expected)

    def need(o: dict) -> Any:
        v = get(o)
        if v is None:
            if not _present(o, path):
                raise FieldError(path, "missing")
            if nullable:
                return None
            raise FieldError(path, wrong_type(name, None))
        if not check(v):
            raise FieldError(path, wrong_type(name, v))
        return v

    return need


def _present(o: dict, path: str) -> bool:
    cur: Any = o
    for p in path.split("."):
        if type(cur) is not dict or p not in cur:
            return False
        cur = cur[p]
    return True


def build_predicate(spec: FilterSpec) -> Callable[[dict], bool] | None:
    """Compile the record-wise rules into one closure (None when there are none); raises FieldError on bad types."""
    rules: list[Callable[[dict], bool]] = []
    if spec.status:
        get_status, statuses = _field("grade.status", str), frozenset(spec.status)
        rules.append(lambda o: get_status(o) in statuses)
    if spec.resolved is not None:
        get_resolved, want = _field("grade.resolved", bool), spec.resolved
        rules.append(lambda o: get_resolved(o) is want)
    if spec.exit_status:
        get_exit, exits = _field("exit_status", str), frozenset(spec.exit_status)
        rules.append(lambda o: get_exit(o) in exits)
    if spec.max_turns is not None:
        get_turns, max_turns = _field("stats.turns", int), spec.max_turns
        rules.append(lambda o: get_turns(o) <= max_turns)
    if spec.max_tokens is not None:
        get_tokens, max_tokens = _field("stats.tokens_total", int), spec.max_tokens
        rules.append(lambda o: get_tokens(o) <= max_tokens)
    if spec.min_reward is not None:
        # A null reward (an infra error: grade.status == "error") never passes --min-reward.
        get_reward, min_reward = _field("grade.reward", float, nullable=True), spec.min_reward
        rules.append(lambda o: (r := get_reward(o)) is not None and r >= min_reward)
    if spec.where is not None:
        rules.append(compile_expr(spec.where))
    if not rules:
        return None
    pred = rules[0]
    for rule in rules[1:]:
        pred = (lambda a, b: lambda o: a(o) and b(o))(pred, rule)
    return pred


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


_RESOLVED = _field("grade.resolved", bool)


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
@dataclass(slots=True)
class FilterResult:
    """Counts for the stderr summary."""

    read: int = 0
    kept: int = 0
    two_pass: bool = False


# Schema tags this swerl reads; anything else goes through check_schema for its one-line error.
_KNOWN_TAGS = frozenset(f"{name}/{v}" for name, versions in KNOWN_VERSIONS.items() for v in versions)


def _unique(ids: UniqueIds | None, name: str, n: int, obj: dict) -> None:
    """The shared duplicate-id rule (records.UniqueIds): an id met twice in the input is an error."""
    if ids is not None and (rid := record_id(obj)) is not None:
        ids.check(Located(name, n, obj), rid)


def _load(name: str, n: int, raw: bytes, ids: UniqueIds | None = None) -> dict:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        obj = None
    if type(obj) is not dict:
        parse_raw(name, n, raw)  # raises the precise one-line error
    tag = obj.get("schema")
    if tag is not None and tag not in _KNOWN_TAGS:
        check_schema(Located(name, n, obj))
    _unique(ids, name, n, obj)
    return obj


def _whole(raw: bytes) -> bytes:
    return raw if raw.endswith(b"\n") else raw + b"\n"


def _stream(lines: Iterable[Line], pred: Callable[[dict], bool] | None, write: Write, res: FilterResult) -> None:
    """Record-wise rules only: each kept line written as soon as it is decided; memory holds only the ids seen
    (about 130 bytes a record, for the duplicate-id rule)."""
    loads, decode_error, known_tags = orjson.loads, orjson.JSONDecodeError, _KNOWN_TAGS
    ids = UniqueIds()
    first_at = ids.first.setdefault  # the shared duplicate-id rule, inlined: one C call, one line number per record
    read = kept = 0
    try:
        for name, n, raw in lines:
            read += 1
            try:
                obj = loads(raw)
            except decode_error:
                obj = None
            if type(obj) is not dict:
                parse_raw(name, n, raw)
            tag = obj.get("schema")
            if tag is not None and tag not in known_tags:
                check_schema(Located(name, n, obj))
            rid = obj.get("id")
            if rid.__class__ is not str:
                rid = record_id(obj)
            if rid is not None and first_at(rid, n) != n:
                raise ids.duplicate(Located(name, n, obj), rid)
            if pred is not None:
                try:
                    if not pred(obj):
                        continue
                except FieldError as e:
                    raise InputError(name, n, e.field, e.message) from None
            write(raw if raw[-1:] == b"\n" else raw + b"\n")
            kept += 1
    finally:
        res.read, res.kept = read, kept


class _Unsorted(Exception):
    """A group key reappeared after its group was closed."""

    def __init__(self, name: str, n: int, key: GroupKey):
        super().__init__(f"{name}:{n}")
        self.name, self.n, self.key = name, n, key


def _grouped(lines: Iterable[Line], spec: FilterSpec, pred: Any, write: Write, res: FilterResult) -> None:
    """Group rules over input grouped by (run, instance_id): one group in memory at a time."""
    get_reward = _field(spec.reward_field, float, nullable=True)
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
                write(_whole(raw))
                res.kept += 1

    for name, n, raw in lines:
        res.read += 1
        o = _load(name, n, raw, ids)
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
    get_reward = _field(spec.reward_field, float, nullable=True)
    stats: dict[GroupKey, _GroupStats] = {}
    if spec.needs_group_stats:
        for name, n, raw in open_lines():
            o = _load(name, n, raw)
            k = group_key(Located(name, n, o))
            st = stats.get(k) or stats.setdefault(k, _GroupStats())
            _located(name, n, st.add, o, spec, get_reward)
    selectors: dict[GroupKey, _Selector] = {}
    res.read = res.kept = 0
    res.two_pass = True
    ids = UniqueIds()
    for name, n, raw in open_lines():
        res.read += 1
        o = _load(name, n, raw, ids)
        k = group_key(Located(name, n, o))
        if spec.needs_group_stats and not stats[k].passes(spec):
            continue
        if pred is not None and not _located(name, n, pred, o):
            continue
        sel = selectors.get(k) or selectors.setdefault(k, _Selector())
        if _located(name, n, sel.take, o, spec):
            write(_whole(raw))
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
        for raw in self.fh:
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
        _stream(iter_raw(src), pred, write, res)
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
