"""`swerl filter`'s rules (FilterSpec) and the record-wise ones compiled into one predicate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from swerl_cli.core.config import flag
from swerl_cli.core.errors import ConfigError
from swerl_cli.filtering.expr import compile_expr, path_getter
from swerl_cli.streams.records import EXIT_STATUSES, GRADE_STATUSES, type_check, wrong_type


class FieldError(Exception):
    """A field a rule needs has the wrong type; the caller adds the file and line."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def parse_solve_rate(text: str) -> tuple[float, float]:
    """`parse_solve_rate("0.2:0.8") == (0.2, 0.8)`; bounds are inclusive fractions."""
    lo, sep, hi = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return float(lo), float(hi)
    except ValueError:
        raise ConfigError(f"--solve-rate: expected LO:HI fractions such as 0.2:0.8, got {text!r}") from None


@dataclass(frozen=True, slots=True)
class FilterSpec:
    """Every `swerl filter` rule; empty/None means the rule is off."""

    # Each field is a flag of `swerl filter`, in this order in its --help.
    status: tuple[str, ...] = flag((), "Keep grade.status equal to this (repeatable).", metavar="STATUS")
    resolved: bool | None = flag(None, "Keep grade.resolved true / false.", names=("--resolved/--unresolved",))
    exit_status: tuple[str, ...] = flag((), "Keep this exit_status (repeatable).", metavar="EXIT")
    max_turns: int | None = flag(None, "Keep stats.turns <= N.", metavar="N")
    max_tokens: int | None = flag(None, "Keep stats.tokens_total <= N.", metavar="N")
    min_reward: float | None = flag(
        None, "Keep grade.reward >= X (a null reward, i.e. an infra error, never passes).", metavar="X"
    )
    where: str | None = flag(
        None,
        'Expression over dotted fields: == != < <= > >= in, and/or/not, parentheses, literals 1 2.5 "s" true false '
        "null [..]. A missing field is null; ordering mixed types is false. See docs/records.md.",
        metavar="EXPR",
    )
    group_mixed: bool = flag(
        False,
        "Keep only groups whose non-null rewards are not all equal (DAPO dynamic sampling).",
        names=("--group-mixed",),
    )
    reward_field: str = flag("grade.reward", "Dotted field --group-mixed compares.", metavar="FIELD")
    solve_rate: tuple[float, float] | None = flag(
        None,
        "Keep groups whose solve rate (resolved / samples, infra errors excluded) is in [LO, HI].",
        metavar="LO:HI",
        parse=parse_solve_rate,
    )
    dedupe: bool = flag(False, "Drop records whose patch repeats an earlier one in its group.", names=("--dedupe",))
    per_task: int | None = flag(None, "Keep at most N records per group (the first N).", metavar="N")
    grouped: bool = flag(
        False,
        "Input is grouped by (run, instance_id): stream group rules; a reappearing group is an error.",
        names=("--grouped",),
    )

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


# ---------------------------------------------------------------- record-wise rules
def field_getter(path: str, expected: type, nullable: bool = False) -> Callable[[dict], Any]:
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
        get_status, statuses = field_getter("grade.status", str), frozenset(spec.status)
        rules.append(lambda o: get_status(o) in statuses)
    if spec.resolved is not None:
        get_resolved, want = field_getter("grade.resolved", bool), spec.resolved
        rules.append(lambda o: get_resolved(o) is want)
    if spec.exit_status:
        get_exit, exits = field_getter("exit_status", str), frozenset(spec.exit_status)
        rules.append(lambda o: get_exit(o) in exits)
    if spec.max_turns is not None:
        get_turns, max_turns = field_getter("stats.turns", int), spec.max_turns
        rules.append(lambda o: get_turns(o) <= max_turns)
    if spec.max_tokens is not None:
        get_tokens, max_tokens = field_getter("stats.tokens_total", int), spec.max_tokens
        rules.append(lambda o: get_tokens(o) <= max_tokens)
    if spec.min_reward is not None:
        # A null reward (an infra error: grade.status == "error") never passes --min-reward.
        get_reward, min_reward = field_getter("grade.reward", float, nullable=True), spec.min_reward
        rules.append(lambda o: (r := get_reward(o)) is not None and r >= min_reward)
    if spec.where is not None:
        rules.append(compile_expr(spec.where))
    if not rules:
        return None
    pred = rules[0]
    for rule in rules[1:]:
        pred = (lambda a, b: lambda o: a(o) and b(o))(pred, rule)
    return pred
