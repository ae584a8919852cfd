"""One rule for `--model` (collect's hf and vllm policies, rft, dapo, check-template), checked before any work.

A name that looks like a path (`./m`, `/m`, `~/m`, `a/b/c`), or names an existing directory, must be a usable
`save_pretrained` directory: config.json a JSON object, weights present (`*.safetensors` with a readable header,
or `pytorch_model*.bin`), and a tokenizer (tokenizer.json, tokenizer.model, vocab.json or tokenizer_config.json).
Anything else is one ConfigError line (exit 3) naming what is missing. Other names are hub ids, left to the loader.

`load_tokenizer` is the one tokenizer loader of the trainers and the policies (transformers imported inside it).
"""

from __future__ import annotations

import json
import os
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
    shards = sorted(path.glob("*.safetensors"))
    if not shards and not any(path.glob("pytorch_model*.bin")):
        return "no weights (*.safetensors or pytorch_model*.bin)"
    for shard in shards:
        bad = _bad_safetensors(shard)
        if bad:
            return f"{shard.name} is not a safetensors file ({bad})"
    if not any((path / f).is_file() for f in _TOKENIZER_FILES):
        return f"no tokenizer (none of {', '.join(_TOKENIZER_FILES)})"
    return None


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
    return None if isinstance(header, dict) else "header is not a JSON object"
