"""Parsing of page selections."""


class PageSpecError(ValueError):
    """Raised for a selection that cannot be parsed."""


def _parse_item(item):
    """Pages of one comma-separated item: "4" or "2-5"."""
    start, sep, end = item.partition("-")
    try:
        first = int(start)
        last = int(end) if sep else first
    except ValueError:
        raise PageSpecError(f"not a page or range: {item!r}") from None
    if first < 1 or last < first:
        raise PageSpecError(f"bad range: {item!r}")
    return range(first, last + 1)


def parse_pages(spec):
    """Return the list of pages selected by `spec`, e.g. "1-3, 7" -> [1, 2, 3, 7]."""
    pages = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        pages.extend(_parse_item(item))
    return pages
