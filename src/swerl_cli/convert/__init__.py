"""`swerl convert`: other agents' trajectories -> swerl trajectory records, and swerl records -> SWE-bench predictions.

One module per source format, each with `NAME`, `matches(obj)` and `convert(obj, path, line, rewrite)`; the dict
below is the only registry. Whole-file formats (SWE-agent `.traj`, mini-swe-agent `.traj.json`) hold one JSON
object; row formats (OpenHands `output.jsonl`, SFT rows) hold one per line. `convert_paths` yields a record or an
InputError per source trajectory, so one broken file costs one line and the rest still converts.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from swerl_cli.convert.harness import HarnessRun
from swerl_cli.core.errors import InputError
from swerl_cli.streams.jsonl import iter_lines, parse_line
from swerl_cli.streams.records import GRADED, TRAJECTORY, Located, Task, UniqueIds, check_schema, dict_at, record_id

FORMATS = {
    "swe-agent": "swerl_cli.convert.sweagent",
    "mini-swe-agent": "swerl_cli.convert.mini",
    "openhands": "swerl_cli.convert.openhands",
    "sft": "swerl_cli.convert.sft",
    "preds": "swerl_cli.convert.preds",
    "swebench-report": "swerl_cli.convert.harness",
}
WHOLE_FILE = ("swe-agent", "mini-swe-agent", "swebench-report")
OUTPUTS = ("swerl", "swebench-preds", "preds-json")
_SUFFIXES = (".traj", ".traj.json", ".jsonl", ".jsonl.gz", ".json")
# Predictions files repeat the patches of the trajectories beside them: a directory skips them (name them to convert).
_PREDICTION_FILES = ("preds.json", "all_preds.jsonl")


def module(name: str) -> Any:
    """The converter module of a format name."""
    return importlib.import_module(FORMATS[name])


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


def detect(obj: Any) -> str | None:
    """The format whose shape `obj` has (SWE-agent first: its files also have `info`), or None."""
    for name in ("swe-agent", "mini-swe-agent", "openhands", "sft", "preds"):
        if module(name).matches(obj):
            return name
    return None


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


def _is_whole_file(path: str, fmt: str) -> bool:
    """One JSON document (a trajectory file, preds.json, a .pred, a harness report), else JSON Lines."""
    if fmt in WHOLE_FILE:
        return True
    return fmt in ("auto", "preds") and path != "-" and path.endswith((".traj", ".json", ".pred"))


def convert_file(
    path: str, fmt: str, rewrite: bool, harness: HarnessRun | None = None
) -> Iterator[dict[str, Any] | InputError]:
    """Records (or one InputError per unusable trajectory) of one source file; harness results go to `harness`."""
    from swerl_cli.convert import harness as harness_format
    from swerl_cli.convert import preds

    try:
        if _is_whole_file(path, fmt) and not _is_json_lines(path, fmt):
            obj = _whole(path)
            if harness is not None and (fmt == harness_format.NAME or harness_format.matches(obj)):
                harness.add(obj, path)  # merged with the run's other files at the end
                return
            objs: Iterable[tuple[int | None, Any]] = [(None, obj)]
            if isinstance(obj, list):  # a JSON array of rows (SFT releases are sometimes shipped so)
                objs = list(enumerate(obj, 1))
            elif fmt in ("auto", "preds") and preds.is_map(obj):  # preds.json: {instance_id: prediction}
                objs = preds.rows(obj, path)
            for n, o in objs:
                yield _one(o, path, n, fmt, rewrite)
            return
        for loc in _rows(path):
            yield _one(loc.obj, loc.source, loc.line, fmt, rewrite)
    except InputError as e:
        yield e


def _is_json_lines(path: str, fmt: str) -> bool:
    """A `.json` file that holds JSON Lines (several objects, one per line), as some tools save them."""
    if fmt not in ("auto", "preds") or not path.endswith(".json"):
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


def _rows(path: str) -> Iterator[Located]:
    """JSONL rows, each line parsed on its own: a bad line becomes a Located holding its InputError and reading
    goes on with the next line, in one pass (stdin too: nothing is read twice, nothing after it is dropped)."""
    for name, n, line, has_nl in iter_lines(path):
        try:
            yield parse_line(name, n, line, has_nl)
        except InputError as e:
            yield Located(name, n, e)


def _one(obj: Any, path: str, line: int | None, fmt: str, rewrite: bool) -> dict[str, Any] | InputError:
    if isinstance(obj, InputError):
        return obj
    name = fmt if fmt != "auto" else detect(obj)
    if name is None:
        what = f"top-level keys {sorted(obj)[:6]}" if isinstance(obj, dict) else f"a JSON {type(obj).__name__}"
        return InputError(path, line, None, f"unknown format ({what}); pass --from {'|'.join(FORMATS)}")
    try:
        return module(name).convert(obj, path, line, rewrite)
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
) -> Iterator[dict[str, Any] | InputError]:
    """Every source trajectory of `paths` as a swerl trajectory record (with id, run, sample, task) or an error."""
    seen: dict[tuple[str, str], int] = {}
    harness = HarnessRun(run, model) if fmt in ("auto", "swebench-report") else None

    def converted() -> Iterator[dict[str, Any] | InputError]:
        if harness is not None:  # a directory of harness logs also holds the run_instance.log of failed instances
            harness.roots.update((Path(p), None) for p in paths if Path(p).is_dir())
        for path in expand(paths):
            yield from convert_file(path, fmt, rewrite, harness)
        if harness is not None:
            yield from harness.records()

    for rec in converted():
        if isinstance(rec, InputError):
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
        head = {"id": f"{iid}/{rec_run}/{sample}", "instance_id": iid, "run": rec_run, "sample": sample}
        if tasks is not None:
            head["task"] = tasks[iid].to_json()
        yield {**head, **rec}


def to_prediction(loc: Located, model_name: str | None) -> dict[str, Any]:
    """A trajectory or graded record -> `{instance_id, model_name_or_path, model_patch}` ("" when no patch)."""
    check_schema(loc, TRAJECTORY, GRADED)
    obj = loc.obj
    iid = obj.get("instance_id")
    if not isinstance(iid, str) or not iid:
        raise loc.error("instance_id", "missing" if iid is None else "expected string")
    patch = obj.get("patch")
    if patch is not None and not isinstance(patch, str):
        raise loc.error("patch", "expected string or null")
    policy = dict_at(obj, "policy")
    name = model_name or policy.get("model") or obj.get("run")
    if not isinstance(name, str) or not name:
        raise loc.error("policy.model", "missing: the record names no model; pass --model-name")
    return {"instance_id": iid, "model_name_or_path": name, "model_patch": patch or ""}


def unique_records(records: Iterable[Located]) -> Iterator[Located]:
    """The records of a swerl stream under the shared duplicate-id rule (records.UniqueIds)."""
    ids = UniqueIds()
    for loc in records:
        ids.check(loc, record_id(loc.obj))
        yield loc


def predictions(records: Iterable[Located], model_name: str | None) -> Iterator[dict[str, Any]]:
    """Predictions of a record stream; an instance seen twice is an error (the harness keys by instance)."""
    seen: dict[str, str] = {}
    for loc in records:
        pred = to_prediction(loc, model_name)
        iid = pred["instance_id"]
        if iid in seen:
            raise loc.error(
                "instance_id",
                f"{iid!r} already came from {seen[iid]}; the harness takes one prediction per instance "
                "(keep one sample first, e.g. swerl filter --where 'sample == 0')",
            )
        seen[iid] = f"{loc.source}:{loc.line}"
        yield pred
