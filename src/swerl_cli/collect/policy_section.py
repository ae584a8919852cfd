"""collect's policy section: the backend's name and its own options (`CollectConfig.policy_options`).

A config file may give it as one mapping,

    policy: {name: vllm, tensor_parallel_size: 2, gpu_memory_utilization: 0.8}

which is read as the flat keys it stands for (`policy: vllm`, `tensor_parallel_size: 2`, ...), which still work on their
own (`policy: vllm` beside `tensor_parallel_size: 2`), as do the flags, which win over the file. The section names
only options of the backend it names (`Options.from_section`): anything else, or a key given both in the section
and at the top level, is one ConfigError naming the file and the key.

However given (flags, flat keys, a section, keyword arguments), the options are checked here and kept as the named
backend's `Options` (`policy_section`): collect keeps no copy of them.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from swerl_cli.core.config import check_positive
from swerl_cli.core.errors import ConfigError
from swerl_cli.policy import BACKENDS, PolicyOptions, choices
from swerl_cli.policy.checks import check_base_url, check_device_name
from swerl_cli.policy.engine_size import DTYPES


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


def check_policy_options(options: dict[str, Any]) -> None:
    """The policy options collect was given (`CollectConfig`'s InitVars, by name), checked whichever backend reads
    them: one ConfigError naming the field."""
    if options["tensor_parallel_size"] < 1:
        raise ConfigError(f"field 'tensor_parallel_size': must be >= 1, got {options['tensor_parallel_size']}")
    if options["dtype"] not in DTYPES:
        raise ConfigError(f"field 'dtype': choose one of {', '.join(DTYPES)}, got {options['dtype']!r}")
    check_positive("request_timeout_s", options["request_timeout_s"])
    for name in ("max_retries", "backoff_s"):
        check_positive(name, options[name], zero_ok=True)
    for url in options["base_url"]:
        check_base_url(url)
    check_device_name(options["device"])
    share = options["gpu_memory_utilization"]
    if not 0 < share <= 1:
        raise ConfigError(f"field 'gpu_memory_utilization': a share of GPU memory, 0 < x <= 1; got {share}")


def policy_section(name: str, options: dict[str, Any], own: dict[str, Any]) -> PolicyOptions:
    """The `Options` of backend `name`: each of its fields read from the policy option of that name, else from the
    collect setting of that name (`own`: vllm sizes its engine by concurrency and max_context_tokens), else its
    default; options it has no field for are left out."""
    section: PolicyOptions = BACKENDS.cls(name).Options.from_options(**own, **options)
    return section
