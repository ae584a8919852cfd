"""SWE-rebench rows: SWE-bench's mapping; they carry `install_config` (its test_cmd and log_parser win), and
their images live under `swerebench`."""

from __future__ import annotations

from typing import Any

from swerl_cli.tasks.importers.swebench import SweBench


class SweRebench(SweBench):
    """SWE-rebench rows (an `install_config` object)."""

    name = "swe-rebench"
    detect_rank = 10
    namespace = "swerebench"

    @classmethod
    def matches(cls, row: dict[str, Any]) -> bool:
        return isinstance(row.get("install_config"), dict)
