"""The `policy:` section of a collect config file: the backend's name and its own options, as one mapping.

    policy: {name: vllm, tensor_parallel_size: 2, gpu_memory_utilization: 0.8}

is read as the flat keys it stands for (`policy: vllm`, `tensor_parallel_size: 2`, ...), which still work on their
own (`policy: vllm` beside `tensor_parallel_size: 2`), as do the flags, which win over the file. The section names
only options of the backend it names (`Options.from_section`): anything else, or a key given both in the section
and at the top level, is one ConfigError naming the file and the key.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from swerl_cli.core.errors import ConfigError
from swerl_cli.policy import BACKENDS, choices


def flatten_policy(data: dict[str, Any], source: str, fields: Collection[str]) -> dict[str, Any]:
    """`data` (a collect config file's mapping) with a `policy` section replaced by the flat keys it stands for;
    `fields`: the config's field names."""
    section = data.get("policy")
    if not isinstance(section, dict):
        return data
    where = f"{source}: field 'policy'"
    options = {str(k).replace("-", "_"): v for k, v in section.items()}
    name = options.pop("name", None)
    if not isinstance(name, str):
        raise ConfigError(f"{where}: a section names its backend with 'name' (one of {', '.join(choices())})")
    try:
        backend = BACKENDS.cls(name)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
    backend.Options.from_section(options, f"{where}: the {name} policy")  # an option it lacks: one line
    flat = {str(k).replace("-", "_"): v for k, v in data.items() if k != "policy"}
    for key in options:
        if key not in fields:
            raise ConfigError(f"{where}: option '{key}' of the {name} policy is not a collect setting")
        if key in flat:
            raise ConfigError(f"{where}: '{key}' is given twice (in the section and at the top level); keep one")
    return {**flat, "policy": name, **options}
