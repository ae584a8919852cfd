"""SWE-bench predictions: `preds.json` (SWE-agent, mini-swe-agent: one object `{instance_id: prediction}`),
`all_preds.jsonl` (one prediction per line), a `.pred` file (one prediction) and the harness's JSON-array form.

A prediction `{instance_id, model_name_or_path, model_patch}` becomes a trajectory record without messages: its
patch, `exit_status: submitted` and the model as `policy.model`. `convert --tasks` embeds the task; `swerl grade
--tasks` takes it from there otherwise.
"""

from __future__ import annotations

from typing import Any

from swerl_cli.convert.base import Converter
from swerl_cli.convert.common import trajectory_fields
from swerl_cli.core.errors import InputError
from swerl_cli.streams.records import short_json

NAME = "preds"


def is_map(obj: Any) -> bool:
    """`preds.json`: a non-empty object whose every value is a prediction (keyed by its instance id)."""
    return isinstance(obj, dict) and bool(obj) and all(isinstance(v, dict) and "model_patch" in v for v in obj.values())


def rows(obj: dict[str, Any], path: str) -> list[tuple[None, Any]]:
    """The predictions of a `preds.json` object, each with its key as `instance_id` when it names none."""
    out: list[tuple[None, Any]] = []
    for key, row in obj.items():
        iid = row.get("instance_id", key)
        if iid != key:
            out.append((None, InputError(path, None, f"{key}.instance_id", f"{short_json(iid)} differs from its key")))
            continue
        out.append((None, {**row, "instance_id": key}))
    return out


class Predictions(Converter):
    """SWE-bench predictions: rows, or one `preds.json` / `.pred` document."""

    name = NAME
    detect_rank = 50
    document_suffixes = (".traj", ".json", ".pred")  # a lone prediction may be saved under any of these

    @classmethod
    def matches(cls, obj: Any) -> bool:
        """One prediction row: an `instance_id` and a `model_patch` key (its value may be null)."""
        return isinstance(obj, dict) and "model_patch" in obj and isinstance(obj.get("instance_id"), str)

    def document_rows(self, obj: Any, path: str) -> list[tuple[int | None, Any]] | None:
        """preds.json: `{instance_id: prediction}`."""
        return list(rows(obj, path)) if is_map(obj) else None

    def convert(self, obj: Any, path: str, line: int | None) -> dict[str, Any]:
        """One prediction -> one trajectory record (no messages)."""
        if not isinstance(obj, dict):
            raise InputError(path, line, None, "expected a prediction object")
        iid = obj.get("instance_id")
        if not isinstance(iid, str) or not iid:
            raise InputError(path, line, "instance_id", "missing" if iid is None else "expected a non-empty string")
        patch = obj.get("model_patch")
        if patch is not None and not isinstance(patch, str):
            raise InputError(path, line, "model_patch", f"expected string or null, got {short_json(patch)}")
        model = obj.get("model_name_or_path")
        if model is not None and not isinstance(model, str):
            raise InputError(path, line, "model_name_or_path", f"expected string, got {short_json(model)}")
        return trajectory_fields(
            instance_id=iid,
            messages=[],
            patch=patch,
            exit_raw=None,
            exit_status="submitted",
            stats={},
            model=model,
            source={"format": self.name, "file": path, "line": line},
            rewrite=self.options.rewrite,
        )
