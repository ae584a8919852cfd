"""Loading settings."""

import os

from envcfg.convert import convert


def load(defaults, environ=None, prefix="APP_"):
    """`defaults` with each key overridden by `environ[prefix + KEY]` when set."""
    environ = os.environ if environ is None else environ
    settings = dict(defaults)
    for key, default in defaults.items():
        raw = environ.get(prefix + key.upper())
        if raw is None:
            continue
        try:
            settings[key] = convert(raw, default)
        except ValueError as exc:
            raise ValueError(f"{prefix + key.upper()}: {exc}") from None
    return settings
