import pytest

from pagesel import PageSpecError, parse_pages


# Expected values are written as reprs so that test ids read like the output.
@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("4", "[4]"),
        ("1-3", "[1, 2, 3]"),
        ("2, 4", "[2, 4]"),
        ("1-2, 5-6", "[1, 2, 5, 6]"),
    ],
)
def test_parse_pages(spec, expected):
    assert repr(parse_pages(spec)) == expected


@pytest.mark.parametrize("spec", ["x", "3-1", "0", "1-"])
def test_parse_rejects(spec):
    with pytest.raises(PageSpecError):
        parse_pages(spec)


def test_parse_ignores_empty_items():
    assert parse_pages("1,,2,") == [1, 2]
