"""SWE-Gym rows: SWE-bench's mapping without `environment_setup_commit`; their images are
`xingyaoww/sweb.eval.x86_64.{instance_id with __ -> _s_, lower-cased}:latest`."""

from __future__ import annotations

from typing import Any

from swerl_cli.tasks.importers.swebench import SweBench


class SweGym(SweBench):
    """SWE-Gym rows (no `environment_setup_commit`)."""

    name = "swe-gym"
    detect_rank = 30
    namespace = "xingyaoww"

    def image_for(self, row: dict[str, Any], iid: str) -> Any:
        return f"{self.options.namespace or self.namespace}/sweb.eval.x86_64.{iid.lower().replace('__', '_s_')}:latest"

    @classmethod
    def matches(cls, row: dict[str, Any]) -> bool:
        return "environment_setup_commit" not in row
