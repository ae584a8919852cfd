from tinycsv import Dialect, read_rows


def test_read_simple():
    assert read_rows("a,b\nc,d\n") == [["a", "b"], ["c", "d"]]


def test_read_skips_blank_lines():
    assert read_rows("a\n\nb\n") == [["a"], ["b"]]


def test_read_doubled_quotes():
    assert read_rows('"say ""hi""",x\n') == [['say "hi"', "x"]]


def test_read_custom_delimiter():
    assert read_rows("a;b\n", Dialect(delimiter=";")) == [["a", "b"]]


def test_read_empty_fields():
    assert read_rows(",x,\n") == [["", "x", ""]]
