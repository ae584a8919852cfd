"""Writing rows as text."""

from tinycsv.dialect import Dialect


def _quote(field, dialect):
    text = str(field)
    q = dialect.quotechar
    if q in text:
        return q + text.replace(q, q * 2) + q
    return text


def write_rows(rows, dialect=Dialect()):
    """Join rows into text, one line per row, quoting fields where needed."""
    return "".join(dialect.delimiter.join(_quote(f, dialect) for f in row) + dialect.lineterminator for row in rows)
