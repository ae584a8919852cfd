"""Record contracts: schema tags, located field access, and the Task record.

Records stay plain dicts on the hot path (filter, eval) so unknown fields pass through untouched and nothing
is copied; the helpers here validate exactly the fields a stage needs and name the file, line and field when
one is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from swerl_cli.core.errors import InputError
from swerl_cli.streams.values import Located as Located
from swerl_cli.streams.values import dict_at as dict_at
from swerl_cli.streams.values import get_path as get_path
from swerl_cli.streams.values import list_at as list_at
from swerl_cli.streams.values import require as require
from swerl_cli.streams.values import short_json as short_json
from swerl_cli.streams.values import type_check as type_check
from swerl_cli.streams.values import wrong_type as wrong_type

TASK = "swerl.task"
TRAJECTORY = "swerl.trajectory"
GRADED = "swerl.graded"
SUMMARY = "swerl.summary"
EVAL = "swerl.eval"
COMPARE = "swerl.compare"
PAIRED = "swerl.paired"

# Versions each reader understands; a record with an unknown version is rejected with a clear error.
KNOWN_VERSIONS: dict[str, frozenset[int]] = {
    TASK: frozenset({1}),
    TRAJECTORY: frozenset({1}),
    GRADED: frozenset({1}),
    SUMMARY: frozenset({1}),
    EVAL: frozenset({1}),
    COMPARE: frozenset({1}),
    PAIRED: frozenset({1}),
}
CURRENT_VERSION = {name: max(v) for name, v in KNOWN_VERSIONS.items()}

EXIT_STATUSES = ("submitted", "max_turns", "context_limit", "timeout", "format_errors", "error")
GRADE_STATUSES = ("resolved", "unresolved", "patch_failed", "timeout", "error")


def schema_tag(name: str) -> str:
    """`schema_tag("swerl.task") == "swerl.task/1"`: the tag a writer puts on a new record."""
    return f"{name}/{CURRENT_VERSION[name]}"


def record_id(obj: Any) -> str | None:
    """The id the duplicate rule keys on (docs/records.md, "Ids"): the record's `id`; a SWE-bench prediction row,
    which has none, is `{instance_id}/{model_name_or_path}` (as `grade` names it); None when neither applies.

    >>> record_id({"id": "a/r/0"}), record_id({"instance_id": "a", "model_name_or_path": "m"}), record_id({})
    ('a/r/0', 'a/m', None)
    """
    if not isinstance(obj, dict):
        return None
    rid = obj.get("id")
    if isinstance(rid, str):
        return rid
    iid, model = obj.get("instance_id"), obj.get("model_name_or_path")
    if isinstance(iid, str) and isinstance(model, str) and "task" not in obj:
        return f"{iid}/{model}"
    return None


class UniqueIds:
    """The one duplicate-id rule of every command that reads records (collect, grade, eval, filter, dapo, convert).

    An id met twice in one input stream is bad input: `check` raises a one-line InputError naming both places
    (exit 3). Ids in `skip` (with `--resume`: already in the output) are not errors: `check` returns False and
    the caller skips the record. Memory: one entry per distinct id.
    """

    __slots__ = ("first", "skip")

    def __init__(self, skip: set[str] | frozenset[str] = frozenset()) -> None:
        # id -> (source, line) where it was first met; a bare line number means the current record's source
        self.first: dict[str, tuple[str, int | None] | int] = {}
        self.skip = skip

    def check(self, loc: Located, rid: str | None, what: str = "id") -> bool:
        """True for a new id (or None: nothing to check), False for one in `skip`; raises for a repeated one."""
        if rid is None:
            return True
        if rid in self.skip:
            return False
        here = (loc.source, loc.line)
        if self.first.setdefault(rid, here) is not here:
            raise self.duplicate(loc, rid, what)
        return True

    def duplicate(self, loc: Located, rid: str, what: str = "id") -> InputError:
        """The one-line error for `rid` met again at `loc` (hot loops test `first.setdefault` themselves)."""
        first = self.first[rid]
        source, line = (loc.source, first) if isinstance(first, int) else first
        where = f"{source}:{line}" if line is not None else source
        return loc.error(
            what,
            f"duplicate {what} {rid!r}, first at {where}; an {what} may appear once in a stream "
            "(docs/records.md, Ids): keep one of the two records",
        )


def check_schema(loc: Located, *allowed: str) -> str | None:
    """Check the record's `schema` tag: unknown kinds or versions are errors; an absent tag is allowed.

    Returns the kind name (e.g. "swerl.trajectory") or None when the record carries no tag.
    """
    if not isinstance(loc.obj, dict):
        raise loc.error(None, "expected a JSON object")
    tag = loc.obj.get("schema")
    if tag is None:
        return None
    if not isinstance(tag, str) or "/" not in tag:
        raise loc.error("schema", f"expected 'name/version', got {short_json(tag)}")
    name, _, version = tag.rpartition("/")
    if name not in KNOWN_VERSIONS or not version.isdigit():
        raise loc.error("schema", f"unknown schema {tag!r}")
    if int(version) not in KNOWN_VERSIONS[name]:
        known = ", ".join(str(v) for v in sorted(KNOWN_VERSIONS[name]))
        raise loc.error("schema", f"unsupported version {version} of {name} (this swerl reads {known}); upgrade swerl")
    if allowed and name not in allowed:
        raise loc.error("schema", f"expected a {' or '.join(allowed)} record, got {tag!r}")
    return name


def _str_list(loc: Located, key: str) -> list[str]:
    """FAIL_TO_PASS / PASS_TO_PASS: a list of strings, or a JSON-encoded list in a string (SWE-bench on HF)."""
    value = loc.obj.get(key, [])
    if isinstance(value, str):
        import orjson

        try:
            value = orjson.loads(value) if value.strip() else []
        except orjson.JSONDecodeError:
            raise loc.error(key, "a string that is not a JSON list") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise loc.error(key, wrong_type("array of strings", value))
    return value


@dataclass(slots=True)
class Task:
    """A SWE-bench instance plus how to run it (docs/records.md). Unknown fields ride along in `extra`."""

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    image: str
    workdir: str
    test_cmd: str
    test_patch: str = ""
    patch: str | None = None
    FAIL_TO_PASS: list[str] = field(default_factory=list)
    PASS_TO_PASS: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    _REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "image", "workdir", "test_cmd")

    @classmethod
    def from_json(cls, loc: Located, prefix: str = "") -> Task:
        """Validate a task object (or the embedded `task` of a trajectory when `prefix="task"`)."""
        inner = Located(loc.source, loc.line, require(loc, prefix, dict) if prefix else loc.obj)
        if not isinstance(inner.obj, dict):
            raise loc.error(None, "expected a JSON object")

        def err_path(k: str) -> str:
            return f"{prefix}.{k}" if prefix else k

        values: dict[str, Any] = {}
        for key in cls._REQUIRED:
            v = inner.obj.get(key)
            if not isinstance(v, str):
                what = "missing" if key not in inner.obj else wrong_type("string", v)
                raise loc.error(err_path(key), what)
            values[key] = v
        for key in ("test_patch", "patch"):
            v = inner.obj.get(key)
            if v is not None and not isinstance(v, str):
                raise loc.error(err_path(key), wrong_type("string", v))
            values[key] = v
        values["test_patch"] = values["test_patch"] or ""
        try:
            values["FAIL_TO_PASS"] = _str_list(inner, "FAIL_TO_PASS")
            values["PASS_TO_PASS"] = _str_list(inner, "PASS_TO_PASS")
            setup = inner.obj.get("setup", [])
            if isinstance(setup, str):
                setup = [setup]
            if not isinstance(setup, list) or not all(isinstance(s, str) for s in setup):
                raise inner.error("setup", wrong_type("array of strings", setup))
        except InputError as e:
            raise loc.error(err_path(e.field or ""), e.message) from None
        values["setup"] = setup
        known = set(cls._REQUIRED) | {"test_patch", "patch", "FAIL_TO_PASS", "PASS_TO_PASS", "setup", "schema"}
        values["extra"] = {k: v for k, v in inner.obj.items() if k not in known}
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "instance_id": self.instance_id,
            "repo": self.repo,
            "base_commit": self.base_commit,
            "problem_statement": self.problem_statement,
            "image": self.image,
            "workdir": self.workdir,
            "test_cmd": self.test_cmd,
            "test_patch": self.test_patch,
            "patch": self.patch,
            "FAIL_TO_PASS": list(self.FAIL_TO_PASS),
            "PASS_TO_PASS": list(self.PASS_TO_PASS),
            "setup": list(self.setup),
        }
        out.update(self.extra)
        out["schema"] = schema_tag(TASK)
        return out
