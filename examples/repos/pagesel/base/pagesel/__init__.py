"""Printer-style page selections: parse "1-3, 7" into pages and back."""

from pagesel.format import format_pages
from pagesel.parse import PageSpecError, parse_pages

__all__ = ["PageSpecError", "format_pages", "parse_pages"]
