"""Settings from defaults overridden by environment variables."""

from envcfg.convert import convert
from envcfg.loader import load

__all__ = ["convert", "load"]
