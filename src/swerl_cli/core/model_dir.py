"""One rule for `--model` (collect's hf and vllm policies, rft, dapo, check-template), checked before any work.

A name that looks like a path (`./m`, `/m`, `~/m`, `a/b/c`), or names an existing directory, must be a usable
`save_pretrained` directory: config.json a JSON object whose `model_type` the installed transformers (or vLLM) knows
(unless `auto_map` brings its own code), weights present (`*.safetensors` whose header is JSON and whose tensors lie
within the file, or `pytorch_model*.bin`), and a tokenizer (tokenizer.json, which must parse as JSON,
tokenizer.model, vocab.json or tokenizer_config.json). Anything else is one ConfigError line (exit 3) naming what is
wrong. Other names are hub ids, left to the loader. The checks read headers and small files only and import neither
torch nor transformers (`known_model_types` reads the model-type tables from their source files).

`load_tokenizer` is the one tokenizer loader of the trainers and the policies (transformers imported inside it).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import struct
from pathlib import Path
from typing import Any

from swerl_cli.core.errors import ConfigError, SwerlError, first_line

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")
_MAX_HEADER = 100 << 20  # a safetensors header longer than 100 MB is not one


def looks_like_path(name: str) -> bool:
    """True for names that are meant as local paths rather than hub ids (`org/model`)."""
    return name.startswith((".", "/", "~")) or name.count("/") > 1 or os.path.isdir(os.path.expanduser(name))


def check_model_dir(name: str) -> None:
    """Refuse, with one line, a local `--model` that is not a usable save_pretrained directory (module docstring)."""
    if not looks_like_path(name):
        return
    path = Path(os.path.expanduser(name))
    if not path.is_dir():
        raise ConfigError(_no_such_dir(name))
    problem = _problem(path)
    if problem:
        raise ConfigError(f"--model {name}: not a usable model directory: {problem}")


def load_tokenizer(name: str, error: type[SwerlError] = ConfigError) -> Any:
    """AutoTokenizer of `--model` (a save_pretrained dir or a cached hub id); a failure is one `error` line.

    A name that looks like a path must be a directory; the full directory check is `check_model_dir`, which the
    commands run before any work. Trainers fail with ConfigError (exit 3); a policy passes PolicyError, so a model
    that breaks inside an episode becomes that episode's error record.
    """
    from transformers import AutoTokenizer

    if looks_like_path(name) and not os.path.isdir(os.path.expanduser(name)):
        raise error(_no_such_dir(name))
    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as e:
        first = first_line(e)
        raise error(f"--model {name}: cannot load a tokenizer: {first}") from None


def _no_such_dir(name: str) -> str:
    return f"--model {name}: no such model directory (expected a save_pretrained dir or a hub name)"


def _problem(path: Path) -> str | None:
    config = path / "config.json"
    try:
        obj = json.loads(config.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "no config.json (expected a save_pretrained directory)"
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return f"config.json is not readable JSON ({str(e).splitlines()[0][:120]})"
    if not isinstance(obj, dict):
        return "config.json is not a JSON object"
    model_type = obj.get("model_type")
    known = known_model_types()
    if known and "auto_map" not in obj and isinstance(model_type, str) and model_type not in known:
        return (
            f"config.json: model_type {model_type!r} is not a model type the installed transformers knows "
            "(a newer transformers, or a checkpoint that names its own code in auto_map, is needed)"
        )
    shards = sorted(path.glob("*.safetensors"))
    if not shards and not any(path.glob("pytorch_model*.bin")):
        return "no weights (*.safetensors or pytorch_model*.bin)"
    for shard in shards:
        bad = _bad_safetensors(shard)
        if bad:
            return f"{shard.name} is not a safetensors file ({bad})"
    if not any((path / f).is_file() for f in _TOKENIZER_FILES):
        return f"no tokenizer (none of {', '.join(_TOKENIZER_FILES)})"
    tokenizer = path / "tokenizer.json"
    if tokenizer.is_file():
        try:
            if not isinstance(json.loads(tokenizer.read_bytes()), dict):
                return "tokenizer.json is not a JSON object"
        except (OSError, ValueError) as e:
            return f"tokenizer.json is not readable JSON ({str(e).splitlines()[0][:120]})"
    return None


# `("qwen2", "Qwen2Config")` in transformers' tables, `qwen2="Qwen2Config"` in vLLM's registry
_TYPE_ENTRY = re.compile(r"""["']([\w.-]+)["']\s*[,:]\s*["']\w+Config["']|\b(\w+)\s*=\s*["']\w+Config["']""")
_TYPE_TABLES = (
    ("transformers", ("models/auto/auto_mappings.py", "models/auto/configuration_auto.py")),
    ("vllm", ("transformers_utils/config.py",)),
)


@functools.cache
def known_model_types() -> frozenset[str]:
    """The `model_type`s the installed transformers (and vLLM, which adds a few) can load, read from the source of
    their tables without importing them (importing transformers costs seconds and torch). Empty when transformers
    is absent or its layout is not recognised: the check is then skipped and the loader decides."""
    types: set[str] = set()
    for package, files in _TYPE_TABLES:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):  # a module already in sys.modules without a spec (a stand-in)
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        for name in files:
            try:
                text = (root / name).read_text(encoding="utf-8")
            except OSError:
                continue
            types.update(a or b for a, b in _TYPE_ENTRY.findall(text))
        if package == "transformers" and len(types) < 50:  # not the table we know: do not guess
            return frozenset()
    return frozenset(types)


def _bad_safetensors(shard: Path) -> str | None:
    """Why `shard` is not a safetensors file (8-byte header length, then that much JSON, within the file), or None."""
    try:
        size = shard.stat().st_size
        with open(shard, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                return "shorter than its header"
            (n,) = struct.unpack("<Q", head)
            if n > min(size - 8, _MAX_HEADER):
                return "truncated or corrupt header"
            header = json.loads(fh.read(n))
    except OSError as e:
        return e.strerror or type(e).__name__
    except ValueError:
        return "header is not JSON"
    if not isinstance(header, dict):
        return "header is not a JSON object"
    # every tensor's [begin, end) byte range lies in the data after the header: a file cut short fails here
    ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__" and _offsets(t)]
    if len(ends) != len(header) - ("__metadata__" in header):
        return "header has a tensor without data_offsets"
    if ends and max(ends) > size - 8 - n:
        return f"truncated: its tensors need {max(ends) + 8 + n} bytes, the file has {size}"
    return None


def _offsets(entry: object) -> bool:
    """A header entry with `data_offsets: [begin, end]` (two ints)."""
    offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
    return isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(x, int) for x in offsets)
