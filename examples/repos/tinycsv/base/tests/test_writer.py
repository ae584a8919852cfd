import pytest

from tinycsv import Dialect, write_rows


def test_write_simple():
    assert write_rows([["a", "b"], ["c", "d"]]) == "a,b\nc,d\n"


def test_write_numbers():
    assert write_rows([[1, 2.5]]) == "1,2.5\n"


def test_write_quote_in_field():
    assert write_rows([['say "hi"']]) == '"say ""hi"""\n'


def test_dialect_rejects_same_chars():
    with pytest.raises(ValueError, match="differ"):
        Dialect(delimiter='"')
