"""Files that are not JSON Lines, and the one rule that tells them apart by suffix (`file_kind`): a `.json` or
`.traj` file holds one JSON document (an array, a `{instance_id: {...}}` object as SWE-agent's `preds.json`, or one
object), a `.parquet` file a table; every other path, `-` included, is JSON Lines (`.gz` transparently; read by
jsonl.py, whose `read_records` / `read_rows` dispatch on `file_kind`).

A `.json` file is parsed strictly first, then as the standard library reads it (NaN, integers past 64 bits, a
UTF-8 byte order mark), then as JSON Lines saved under a `.json` name: a file that is valid JSON is never called
invalid, and one that is not gets one line with the position of the first error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from swerl_cli.core.errors import InputError
from swerl_cli.streams.records import Located

# Files that hold one JSON document (pretty-printed or not), and tables; everything else is JSON Lines
# (docs/records.md).
DOCUMENT_SUFFIXES = (".json", ".traj")
TABLE_SUFFIXES = (".parquet",)
FileKind = Literal["document", "table", "lines"]


def file_kind(src: str) -> FileKind:
    """How a path is read, by its suffix: `file_kind("preds.json") == "document"`, `"-"` is always JSON Lines."""
    if src.endswith(DOCUMENT_SUFFIXES):
        return "document"
    if src.endswith(TABLE_SUFFIXES):
        return "table"
    return "lines"


def _load(path: str) -> Any:
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(path, None, None, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, None, None, "is a directory, expected a JSON file") from None
    import orjson

    if not raw.strip():
        raise InputError(path, None, None, "empty file: expected a JSON document (an object or an array of objects)")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    text = raw.decode("utf-8-sig", errors="replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        first = e
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append((n, json.loads(line)))
            except json.JSONDecodeError:
                raise InputError(
                    path, first.lineno, None, f"not valid JSON: {first.msg} (column {first.colno})"
                ) from None
    return _JsonLines(rows)


class _JsonLines(list):
    """(line number, value) pairs of a `.json` file that holds JSON Lines."""


def read_document(path: str) -> Iterator[Located]:
    """Rows of a file holding one JSON document: an array gives one row per element, an `{instance_id: {...}}`
    object one per value, any other object one row; JSON Lines saved under this name are read line by line."""
    data = _load(path)
    if isinstance(data, _JsonLines):
        for n, obj in data:
            if not isinstance(obj, dict):
                raise InputError(path, n, None, f"expected a JSON object, got {type(obj).__name__}")
            yield Located(path, n, obj)
        return
    if isinstance(data, list):
        items = [(f"{path}: row {i}", row) for i, row in enumerate(data)]
    elif (
        isinstance(data, dict)
        and data
        and all(isinstance(v, dict) for v in data.values())
        and ("instance_id" not in data)
    ):
        # {instance_id: {...}} (preds.json): each value is a row; its key is its instance_id when it names none
        items = [(f"{path}: {key!r}", {"instance_id": key, **row}) for key, row in data.items()]
    elif isinstance(data, dict):
        items = [(path, data)] if data else []
    else:
        raise InputError(path, None, None, f"expected a JSON object or an array of objects, got {type(data).__name__}")
    for where, row in items:
        if not isinstance(row, dict):
            raise InputError(where, None, None, f"expected a JSON object, got {type(row).__name__}")
        yield Located(where, None, row)  # type: ignore[arg-type]


def read_table(path: str) -> Iterator[Located]:
    """Rows of a parquet file, each located as `PATH: row N`."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(path, None, None, "reading parquet needs pyarrow: pip install 'swerl-cli[parquet]'") from None
    try:
        pf = pq.ParquetFile(path)
    except FileNotFoundError:
        raise InputError(path, None, None, "no such file") from None
    except Exception as e:  # pyarrow raises several types for a bad file
        raise InputError(path, None, None, f"not a readable parquet file: {str(e).splitlines()[0]}") from None
    i = 0
    for batch in pf.iter_batches(batch_size=512):
        for row in batch.to_pylist():
            yield Located(f"{path}: row {i}", None, row)  # type: ignore[arg-type]
            i += 1
