"""The graded record read once, and the group a record belongs to (docs/records.md, "Reading a graded record").

Every command that reads graded records for their verdicts (`eval`, `eval --compare`, `report`, `dapo`) goes
through `read_graded`, so one file passes or fails the same way everywhere and a bad field is the same one-line
`FILE:LINE: field 'PATH': ...` error (exit 3). The view is typed and frozen; the record itself (`view.loc.obj`)
stays the plain dict it was read as, so fields nobody validates still pass through untouched.

    for loc in read_records("graded.jsonl"):
        g = read_graded(loc)           # InputError naming file, line and field when a field is wrong
        if not g.is_error:
            print(g.group, g.resolved, g.turns)

A *group* is the records of one task in one run: `(run, instance_id)`, with the run compared as text, as the
record id `{instance_id}/{run}/{sample}` writes it, so `run: 1` and `run: "1"` are one group (`group_key`).
`filter`'s group rules and `dapo`'s advantages both key on it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from swerl_cli.streams.records import GRADE_STATUSES, GRADED, Located, check_schema, get_path, record_id, require

GroupKey = tuple[str | None, str]  # (run as text, or None when the record has no run; instance_id)


def step_penalty(turns: int, l_thr: int = 10, t_max: int = 40) -> float:
    """Eq. 4: 0 below L_thr turns, else (L_thr - turns) / (T_max - L_thr). `step_penalty(25, 10, 40) == -0.5`.

    R_final = test reward + this (paper Eq. 3): `dapo` trains on it and `report` shows it, from one formula.
    """
    if turns < l_thr:
        return 0.0
    return (l_thr - turns) / (t_max - l_thr)


def run_text(run: str | int | None) -> str | None:
    """The run as the record id writes it: `run_text(1) == run_text("1") == "1"`; no run stays None."""
    return None if run is None else str(run)


def group_key(loc: Located) -> GroupKey:
    """(run as text, instance_id): the group `loc`'s record belongs to; `run` may be absent or null.

    >>> group_key(Located("f", 1, {"run": 1, "instance_id": "a"})), group_key(Located("f", 2, {"instance_id": "a"}))
    (('1', 'a'), (None, 'a'))
    """
    obj = loc.obj
    iid, run = obj.get("instance_id"), obj.get("run")
    if type(iid) is not str or not (run is None or type(run) is str or type(run) is int):  # filter's hot path
        require(loc, "instance_id", str)  # raises the located error of the bad field
        require(loc, "run", (str, int), optional=True)
    return run_text(run), iid


# The record fields behind the view's optional attributes, for `GradedRecord.need` (the error `require` gives).
_NEEDED: dict[str, tuple[str, type | tuple[type, ...]]] = {
    "run": ("run", (str, int)),
    "sample": ("sample", int),
    "turns": ("stats.turns", int),
    "tokens": ("stats.tokens_total", int),
}


@dataclass(frozen=True, slots=True)
class GradedRecord:
    """What eval, report and dapo read from one graded record, validated; optional fields are None when absent."""

    loc: Located
    id: str | None
    instance_id: str
    run: str | int | None
    sample: int | None
    status: str  # grade.status, one of records.GRADE_STATUSES
    resolved: bool  # grade.resolved
    reward: float | None  # grade.reward (null for an infrastructure error)
    reason: str | None  # grade.reason: why a patch scored 0 (grading/verdict.py REASONS)
    set_aside: bool  # grade.set_aside is non-empty: the grader set test-infrastructure edits aside
    grade_s: float | None  # grade.duration_s
    exit_status: str | None
    repo: str | None  # task.repo, else a top-level repo
    turns: int | None  # stats.turns
    tokens: int | None  # stats.tokens_total
    wall_s: float | None  # stats.wall_s, the episode's wall time
    policy_version: Any  # policy.version as written (None when absent)

    @property
    def is_error(self) -> bool:
        """An infrastructure failure of grading: no verdict, never counted as reward 0."""
        return self.status == "error"

    @property
    def is_collect_error(self) -> bool:
        """An infrastructure failure of the episode itself (collect's exit_status)."""
        return self.exit_status == "error"

    @property
    def test_reward(self) -> float:
        """1.0 when resolved, else 0.0 (the reward before any step penalty)."""
        return 1.0 if self.resolved else 0.0

    @property
    def group(self) -> GroupKey:
        """The record's group: (run as text, instance_id), as `group_key`."""
        return run_text(self.run), self.instance_id

    def detached(self) -> GradedRecord:
        """The same view without the record dict (file and line kept): for callers that hold many views."""
        return replace(self, loc=Located(self.loc.source, self.loc.line, None))

    def need(self, name: str) -> Any:
        """An optional attribute a caller cannot do without (`sample`, `turns`, `run`, `tokens`): its value, or the
        located error naming the record field (`field 'stats.turns': missing`)."""
        value = getattr(self, name)
        if value is None:
            path, expected = _NEEDED[name]
            require(self.loc, path, expected)  # raises: the field is absent or null
        return value


def read_graded(loc: Located) -> GradedRecord:
    """Validate the fields of a graded record that eval, report and dapo read; a bad one is a located InputError."""
    check_schema(loc, GRADED)
    status = require(loc, "grade.status", str)
    if status not in GRADE_STATUSES:
        raise loc.error("grade.status", f"unknown status {status!r}; expected one of {', '.join(GRADE_STATUSES)}")
    resolved = require(loc, "grade.resolved", bool)
    obj = loc.obj
    stats = isinstance(obj.get("stats"), dict)
    repo = require(loc, "task.repo", str, optional=True) if isinstance(obj.get("task"), dict) else None
    return GradedRecord(
        loc=loc,
        id=record_id(obj),
        instance_id=require(loc, "instance_id", str),
        run=require(loc, "run", (str, int), optional=True),
        sample=require(loc, "sample", int, optional=True),
        status=status,
        resolved=resolved,
        reward=require(loc, "grade.reward", float, optional=True),
        reason=require(loc, "grade.reason", str, optional=True),
        set_aside=bool(get_path(obj, "grade.set_aside", None)),
        grade_s=require(loc, "grade.duration_s", float, optional=True),
        exit_status=require(loc, "exit_status", str, optional=True),
        repo=repo if repo is not None else require(loc, "repo", str, optional=True),
        turns=require(loc, "stats.turns", int, optional=True) if stats else None,
        tokens=require(loc, "stats.tokens_total", int, optional=True) if stats else None,
        wall_s=require(loc, "stats.wall_s", float, optional=True) if stats else None,
        policy_version=get_path(obj, "policy.version", None),
    )
