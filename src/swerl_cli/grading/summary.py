"""A SWE-bench-style run summary (schema_version 2 keys) over graded records, plus swerl's own breakdown."""

from __future__ import annotations

from typing import Any


class GradeSummary:
    """Accumulates graded records; `to_json()` gives the summary. Ids are record ids (`instance/model` for rows)."""

    def __init__(self) -> None:
        self.by_id: dict[str, dict[str, Any]] = {}

    def add(self, record: dict[str, Any]) -> None:
        """Count one graded record (a later record with the same id replaces the earlier one)."""
        grade = record.get("grade") or {}
        self.by_id[str(record.get("id"))] = {
            "status": grade.get("status"),
            "empty": _empty_patch(record, grade),
            "reason": grade.get("reason"),
            "set_aside": bool(grade.get("set_aside")),
        }

    def to_json(self) -> dict[str, Any]:
        """The summary: counts and sorted id lists; errors include patch_failed and timeout, as in SWE-bench."""
        ids: dict[str, list[str]] = {
            k: []
            for k in (
                "resolved",
                "unresolved",
                "empty_patch",
                "error",
                "patch_failed",
                "timeout",
                "infra_error",
                "completed",
                "submitted",
            )
        }
        for rid, info in sorted(self.by_id.items()):
            st = info["status"]
            ids["submitted"].append(rid)
            if info["empty"]:
                ids["empty_patch"].append(rid)
                continue
            if st in ("resolved", "unresolved"):
                ids["completed"].append(rid)
                ids[st].append(rid)
            else:
                ids["error"].append(rid)
                ids["infra_error" if st == "error" else st if st in ids else "infra_error"].append(rid)
        out: dict[str, Any] = {
            "total_instances": len(self.by_id),
            "submitted_instances": len(ids["submitted"]),
            "completed_instances": len(ids["completed"]),
            "resolved_instances": len(ids["resolved"]),
            "unresolved_instances": len(ids["unresolved"]),
            "empty_patch_instances": len(ids["empty_patch"]),
            "error_instances": len(ids["error"]),
        }
        for key in (
            "completed",
            "empty_patch",
            "submitted",
            "resolved",
            "unresolved",
            "error",
            "patch_failed",
            "timeout",
            "infra_error",
        ):
            out[f"{key}_ids"] = ids[key]
        out["schema_version"] = 2
        # swerl's own: unresolved because the patch broke the test run (docs/grading.md, attribution), by reason,
        # and the patches whose test-infrastructure edits were set aside
        reasons: dict[str, list[str]] = {}
        for rid, info in sorted(self.by_id.items()):
            if info["reason"]:
                reasons.setdefault(str(info["reason"]), []).append(rid)
        out["unresolved_reason_ids"] = reasons
        out["set_aside_ids"] = sorted(rid for rid, info in self.by_id.items() if info["set_aside"])
        return out


def _empty_patch(record: dict[str, Any], grade: dict[str, Any]) -> bool:
    """Whether the record submitted no patch: its patch text is there and blank, and its grade does not say a patch
    was applied. A record that carries the verdict but not the patch text (`filter --drop patch`, converted harness
    results) is counted by its verdict, never as an empty patch."""
    if grade.get("patch_applied") is True:
        return False
    key = "model_patch" if "model_patch" in record else "patch" if "patch" in record else None
    if key is None:
        return False
    patch = record[key]
    return patch is None or (isinstance(patch, str) and not patch.strip())
