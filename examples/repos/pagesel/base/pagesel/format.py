"""Formatting of page lists as compact selections."""


def format_pages(pages):
    """Return the shortest selection for `pages`: [1, 2, 3, 7] -> "1-3, 7"."""
    parts = []
    run_start = prev = None
    for page in pages:
        if prev is not None and page == prev + 1:
            prev = page
            continue
        if run_start is not None:
            parts.append(_run(run_start, prev))
        run_start = prev = page
    if run_start is not None:
        parts.append(_run(run_start, prev))
    return ", ".join(parts)


def _run(first, last):
    return str(first) if first == last else f"{first}-{last}"
