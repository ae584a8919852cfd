"""One JSONL line of `swerl filter`'s input: parsed, its schema and id checked; and the record-wise pass, which
writes each kept line as soon as it is decided."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from swerl_cli.core.errors import InputError
from swerl_cli.filtering.spec import FieldError
from swerl_cli.streams.jsonl import parse_raw
from swerl_cli.streams.records import KNOWN_VERSIONS, Located, UniqueIds, check_schema, record_id

Write = Callable[[bytes], Any]
Line = tuple[str, int, bytes]


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


def load_line(name: str, n: int, raw: bytes, ids: UniqueIds | None = None) -> dict:
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


def whole_line(raw: bytes) -> bytes:
    return raw if raw.endswith(b"\n") else raw + b"\n"


def stream_records(lines: Iterable[Line], pred: Callable[[dict], bool] | None, write: Write, res: FilterResult) -> None:
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
