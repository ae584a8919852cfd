"""A trajectory format defined outside swerl: the "where to add a converter" proof (tests/convert/test_registry.py
registers it). Its rows: `{"toy_task", "prompt", "replies": [...], "diff"}`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swerl_cli.convert import Converter, ConverterConfig
from swerl_cli.convert.common import message, trajectory_fields
from swerl_cli.core.errors import InputError


@dataclass(frozen=True, slots=True)
class ToyConfig(ConverterConfig):
    """The shared `rewrite` option plus one of its own."""

    system_prompt: str = "You are a toy agent."


class ToyAgent(Converter):
    """Rows of the toy format, claimed by their `toy_task` before any built-in format looks at them."""

    name = "toy-agent"
    Config = ToyConfig

    @classmethod
    def matches(cls, obj: Any) -> bool:
        return isinstance(obj, dict) and "toy_task" in obj

    def convert(self, obj: Any, path: str, line: int | None) -> dict[str, Any]:
        if not self.matches(obj):
            raise InputError(path, line, "toy_task", "missing: not a toy-agent row")
        assert isinstance(self.config, ToyConfig)
        messages = [message("system", self.config.system_prompt), message("user", obj.get("prompt"))]
        messages += [message("assistant", r) for r in obj.get("replies", [])]
        return trajectory_fields(
            instance_id=obj["toy_task"],
            messages=messages,
            patch=obj.get("diff"),
            exit_raw="submitted",
            stats={},
            model=None,
            source={"format": self.name, "file": path, "line": line},
            rewrite=self.config.rewrite,
        )
