"""Semantic version parsing and ordering."""

from verscmp.version import Version, latest

__all__ = ["Version", "latest"]
