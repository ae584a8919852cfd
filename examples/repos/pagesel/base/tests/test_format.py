from pagesel import format_pages, parse_pages


def test_format_runs():
    assert format_pages([1, 2, 3, 7]) == "1-3, 7"


def test_format_empty():
    assert format_pages([]) == ""


def test_roundtrip():
    assert format_pages(parse_pages("1-3, 5, 9-10")) == "1-3, 5, 9-10"
