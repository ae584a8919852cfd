"""A very small CSV reader and writer."""

from tinycsv.dialect import Dialect
from tinycsv.reader import read_rows
from tinycsv.writer import write_rows

__all__ = ["Dialect", "read_rows", "write_rows"]
