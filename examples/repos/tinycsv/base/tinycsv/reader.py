"""Reading rows from text."""

from tinycsv.dialect import Dialect


def _unquote(field, quote):
    if len(field) >= 2 and field[0] == quote and field[-1] == quote:
        return field[1:-1].replace(quote * 2, quote)
    return field


def read_rows(text, dialect=Dialect()):
    """Split `text` into rows of fields; blank lines are skipped."""
    rows = []
    for line in text.splitlines():
        if not line:
            continue
        rows.append([_unquote(field, dialect.quotechar) for field in line.split(dialect.delimiter)])
    return rows
