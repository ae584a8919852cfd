"""Agent prompts: an editable YAML file (package default `prompts/default.yaml`) and placeholder filling."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

from swerl_cli.core.config import load_yaml
from swerl_cli.core.errors import ConfigError

DEFAULT_PROMPTS = "default"
_PLACEHOLDER = re.compile(r"\{(problem_statement|hints_text|workdir|output|cwd|file|window|max_turns|n|timeout_s)\}")


@dataclass(frozen=True, slots=True)
class PromptConfig:
    """Every text the scaffold shows the model; see prompts/default.yaml for the meaning of each field."""

    system: str
    instance: str
    observation: str
    empty_output: str
    timeout_output: str
    truncation_marker: str
    format_error_no_command: str
    format_error_multiple: str
    tool_description: str
    tools_response: str
    demonstration: str = ""


def load_prompts(path: str | Path | None = None) -> PromptConfig:
    """Load a prompt YAML file (or the packaged default); missing or unknown keys are a ConfigError."""
    if path is None:
        text = resources.files("swerl_cli.agent").joinpath(f"prompts/{DEFAULT_PROMPTS}.yaml")
        with resources.as_file(text) as p:
            data = load_yaml(p)
        source = f"<package>/prompts/{DEFAULT_PROMPTS}.yaml"
    else:
        data, source = load_yaml(path), str(path)
    known = {f.name for f in fields(PromptConfig)}
    for key, value in data.items():
        if key not in known:
            raise ConfigError(f"{source}: unknown prompt field '{key}' (known: {', '.join(sorted(known))})")
        if not isinstance(value, str):
            raise ConfigError(f"{source}: prompt field '{key}' must be a string")
    required = {f.name for f in fields(PromptConfig) if f.name != "demonstration"}
    missing = sorted(required - set(data))
    if missing:
        raise ConfigError(f"{source}: missing prompt fields {', '.join(missing)}; start from `swerl collect` defaults")
    return PromptConfig(**data)


def fill(template: str, **values: Any) -> str:
    """Replace the known `{name}` placeholders; other braces (code in prompts) stay as they are.

    >>> fill("{cwd} {x}", cwd="/p")
    '/p {x}'
    """

    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        return str(values[key]) if key in values else m.group(0)

    return _PLACEHOLDER.sub(sub, template)
