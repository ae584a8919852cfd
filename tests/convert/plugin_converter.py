"""A trajectory format defined outside swerl: the "where to add a converter" proof (tests/convert/test_registry.py
registers it). Its rows: `{"toy_task", "prompt", "replies": [...], "diff"}`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swerl_cli.convert import Converter, ConverterOptions
from swerl_cli.convert.common import message, trajectory_fields
from swerl_cli.core.errors import InputError


@dataclass(frozen=True, slots=True)
class ToyOptions(ConverterOptions):
    """The shared `rewrite` option plus one of its own."""

    system_prompt: str = "You are a toy agent."


class ToyAgent(Converter):
    """Rows of the toy format, claimed by their `toy_task` before any built-in format looks at them."""

    name = "toy-agent"
    Options = ToyOptions

    @classmethod
    def matches(cls, obj: Any) -> bool:
        return isinstance(obj, dict) and "toy_task" in obj

    def convert(self, obj: Any, path: str, line: int | None) -> dict[str, Any]:
        if not self.matches(obj):
            raise InputError(path, line, "toy_task", "missing: not a toy-agent row")
        assert isinstance(self.options, ToyOptions)
        messages = [message("system", self.options.system_prompt), message("user", obj.get("prompt"))]
        messages += [message("assistant", r) for r in obj.get("replies", [])]
        return trajectory_fields(
            instance_id=obj["toy_task"],
            messages=messages,
            patch=obj.get("diff"),
            exit_raw="submitted",
            stats={},
            model=None,
            source={"format": self.name, "file": path, "line": line},
            rewrite=self.options.rewrite,
        )


# Rows of the format, for the converter contract suite (tests/convert/test_converter_contract.py).
SAMPLES = [{"toy_task": "o__r-1", "prompt": "fix it", "replies": ["done"], "diff": "diff --git a/x b/x\n"}]
