"""swerl records -> SWE-bench predictions (`swerl convert --from swerl --to swebench-preds|preds-json`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from swerl_cli.streams.records import GRADED, TRAJECTORY, Located, UniqueIds, check_schema, dict_at, record_id

OUTPUTS = ("swerl", "swebench-preds", "preds-json")


def is_swerl_record(obj: Any) -> bool:
    """A swerl trajectory or graded record (its `schema` tag says so): `--from auto` passes it through as it is."""
    tag = obj.get("schema") if isinstance(obj, dict) else None
    return isinstance(tag, str) and tag.rpartition("/")[0] in (TRAJECTORY, GRADED)


def to_prediction(loc: Located, model_name: str | None) -> dict[str, Any]:
    """A trajectory or graded record, or a SWE-bench prediction row (`model_patch`, `model_name_or_path`; a graded
    one too), -> `{instance_id, model_name_or_path, model_patch}` ("" when no patch). The model is `model_name`
    (`--model-name`) when given, else the row's `model_name_or_path`, the record's `policy.model`, its `run`."""
    check_schema(loc, TRAJECTORY, GRADED)
    obj = loc.obj
    iid = obj.get("instance_id")
    if not isinstance(iid, str) or not iid:
        raise loc.error("instance_id", "missing" if iid is None else "expected string")
    key = "model_patch" if "model_patch" in obj and "patch" not in obj else "patch"
    patch = obj.get(key)
    if patch is not None and not isinstance(patch, str):
        raise loc.error(key, "expected string or null")
    row_model = obj.get("model_name_or_path")
    if row_model is not None and not isinstance(row_model, str):
        raise loc.error("model_name_or_path", "expected string or null")
    name = model_name or row_model or dict_at(obj, "policy").get("model") or obj.get("run")
    if not isinstance(name, str) or not name:
        field = "model_name_or_path" if key == "model_patch" else "policy.model"
        raise loc.error(field, "missing: the record names no model; pass --model-name")
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


def write_target(out: Any, records: Iterable[Located], target: str, model_name: str | None) -> str:
    """Write `records` to the Output `out` as `--to` says: `swerl` the records themselves, `swebench-preds` one
    prediction per line, `preds-json` one `{instance_id: prediction}` object; returns what was written, in words."""
    if target == "swerl":
        out.write_all(loc.obj for loc in records)
        return f"{out.count} trajectories"
    if target == "swebench-preds":
        out.write_all(predictions(records, model_name))
        return f"{out.count} predictions"
    out.write({p["instance_id"]: p for p in predictions(records, model_name)})
    return "1 file of predictions"
