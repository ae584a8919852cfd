"""swerl records -> SWE-bench predictions (`swerl convert --from swerl --to swebench-preds|preds-json`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from swerl_cli.streams.records import GRADED, TRAJECTORY, Located, UniqueIds, check_schema, dict_at, record_id

OUTPUTS = ("swerl", "swebench-preds", "preds-json")


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
