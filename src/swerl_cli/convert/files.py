"""Reading source files for `swerl convert`: which files a directory stands for, whole-file JSON documents versus
JSON Lines, and one record or InputError per source trajectory, so one broken file costs one line. Under `--from
auto` a swerl trajectory or graded record (its `schema` tag) is already converted: it comes out as it is, Located."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from swerl_cli.convert.base import Converter
from swerl_cli.convert.predictions import is_swerl_record
from swerl_cli.convert.registry import FORMATS, converters, detect
from swerl_cli.core.errors import InputError
from swerl_cli.streams.jsonl import lenient_records
from swerl_cli.streams.records import Located, Task
from swerl_cli.streams.trajectories import trajectory_id, trajectory_record

_SUFFIXES = (".traj", ".traj.json", ".jsonl", ".jsonl.gz", ".json")
# Predictions files repeat the patches of the trajectories beside them: a directory skips them (name them to convert).
_PREDICTION_FILES = ("preds.json", "all_preds.jsonl")


def expand(paths: Iterable[str]) -> list[str]:
    """Files as given; a directory stands for its trajectory and result files (`*.traj`, `*.traj.json`, `*.json`,
    `*.jsonl`); a directory of harness logs may hold only the `run_instance.log` of failed instances."""
    out: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(
                str(f)
                for f in path.rglob("*")
                if f.is_file() and f.name.endswith(_SUFFIXES) and f.name not in _PREDICTION_FILES
            )
            if not found and next(path.rglob("run_instance.log"), None) is None:  # harness logs of failed instances
                raise InputError(p, None, None, "directory holds no .traj, .traj.json, .json or .jsonl files")
            out += found
        else:
            out.append(p)
    return out


def _whole(path: str) -> Any:
    """Parse a whole-file JSON document, naming the file and what is wrong when it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(path, None, None, "no such file") from None
    except OSError as e:
        raise InputError(path, None, None, f"cannot read: {e.strerror or e}") from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        end = len(data.rstrip())
        if getattr(e, "pos", -1) >= end - 1 or "unexpected end" in str(e).lower():
            raise InputError(
                path, None, None, f"truncated: the JSON document ends early (after {len(data)} bytes)"
            ) from None
        raise InputError(path, None, None, f"not valid JSON: {str(e).split(':')[0]}") from None


def _is_document(path: str, active: list[Converter], chosen: bool) -> bool:
    """One JSON document (a trajectory file, preds.json, a .pred, a harness report), else JSON Lines."""
    if chosen and active[0].whole_file:
        return True
    suffixes = tuple(s for c in active for s in c.document_suffixes)
    return bool(suffixes) and path != "-" and path.endswith(suffixes)


def _is_json_lines(path: str, active: list[Converter], chosen: bool) -> bool:
    """A `.json` file that holds JSON Lines (several objects, one per line), as some tools save them."""
    if (chosen and active[0].whole_file) or not path.endswith(".json"):
        return False
    try:
        with open(path, "rb") as fh:
            first = next((line for line in fh if line.strip()), b"")
            rest = next((line for line in fh if line.strip()), None)
    except OSError:
        return False  # _whole names the problem
    if rest is None:
        return False
    try:
        return isinstance(orjson.loads(first), dict)
    except orjson.JSONDecodeError:
        return False


Converted = dict[str, Any] | InputError | Located  # a converted record, an unusable source, a swerl record as it is


def convert_file(path: str, active: list[Converter], chosen: bool) -> Iterator[Converted]:
    """Records (or one InputError per unusable trajectory) of one source file, by the `active` converters
    (`chosen`: the one `--from` named; else every registered one, tried in detection order)."""
    try:
        if _is_document(path, active, chosen) and not _is_json_lines(path, active, chosen):
            obj = _whole(path)
            if any(c.add(obj, path, chosen=chosen) for c in active):  # a document built into a run-level result
                return
            objs: Iterable[tuple[int | None, Any]] = [(None, obj)]
            if isinstance(obj, list):  # a JSON array of rows (SFT releases are sometimes shipped so)
                objs = list(enumerate(obj, 1))
            else:  # a document of several rows (preds.json: {instance_id: prediction})
                objs = next((r for c in active if (r := c.document_rows(obj, path)) is not None), objs)
            for n, o in objs:
                yield _one(o, path, n, active, chosen)
            return
        for loc in _rows(path):
            yield _one(loc.obj, loc.source, loc.line, active, chosen)
    except InputError as e:
        yield e


def _rows(path: str) -> Iterator[Located]:
    """JSONL rows, each line parsed on its own: a bad line becomes a Located holding its InputError and reading
    goes on with the next line, in one pass (stdin too: nothing is read twice, nothing after it is dropped). A file
    that is not JSON Lines at all (its first lines all unusable: binary, parquet) raises one InputError."""
    for row in lenient_records(path):
        yield Located(row.source or path, row.line or 0, row) if isinstance(row, InputError) else row


def _one(obj: Any, path: str, line: int | None, active: list[Converter], chosen: bool) -> Converted:
    if isinstance(obj, InputError):
        return obj
    if not chosen and is_swerl_record(obj):  # swerl's own record (e.g. for --to swebench-preds): nothing to convert
        return Located(path, line or 0, obj)
    conv = active[0] if chosen else detect(obj, active)
    if conv is None:
        what = f"top-level keys {sorted(obj)[:6]}" if isinstance(obj, dict) else f"a JSON {type(obj).__name__}"
        return InputError(path, line, None, f"unknown format ({what}); pass --from {'|'.join(FORMATS)}")
    try:
        return conv.convert(obj, path, line)
    except InputError as e:
        return e


def convert_paths(
    paths: Iterable[str],
    fmt: str = "auto",
    *,
    tasks: dict[str, Task] | None = None,
    run: str | None = None,
    rewrite: bool = True,
    model: str | None = None,
) -> Iterator[Converted]:
    """Every source trajectory of `paths` as a swerl trajectory record (with id, run, sample, task) or an error; a
    swerl record met under `--from auto` as it is, Located."""
    seen: dict[tuple[str, str], int] = {}
    active = converters(fmt, rewrite=rewrite, run=run, model=model)

    def converted() -> Iterator[Converted]:
        for c in active:
            c.begin(paths)
        for path in expand(paths):
            yield from convert_file(path, active, fmt != "auto")
        for c in active:
            yield from c.finish()

    for rec in converted():
        if isinstance(rec, InputError | Located):
            yield rec
            continue
        iid = rec["instance_id"]
        if tasks is not None and iid not in tasks:
            src = rec["source"]
            yield InputError(src["file"], src["line"], "instance_id", f"no task {iid!r} in --tasks")
            continue
        rec_run = run or rec.get("run") or rec["source"]["format"]
        sample = seen.get((iid, rec_run), 0)
        seen[(iid, rec_run)] = sample + 1
        if isinstance(rec.get("sample"), int):  # a sample the source names (a swerl summary's INSTANCE/RUN/SAMPLE)
            sample = rec["sample"]
        task = tasks[iid].to_json() if tasks is not None else None
        if "schema" not in rec:  # a converted trajectory's fields
            yield trajectory_record(**rec, run=rec_run, sample=sample, task=task)
            continue
        head = {"id": trajectory_id(iid, rec_run, sample), "instance_id": iid, "run": rec_run, "sample": sample}
        yield {**head, **({"task": task} if task is not None else {}), **rec}  # a graded record of the harness
