import pytest

from wordwrap import wrap


def test_wrap_basic():
    assert wrap("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]


def test_wrap_long_word_alone():
    assert wrap("a extraordinarily b", 5) == ["a", "extraordinarily", "b"]


def test_wrap_collapses_whitespace():
    assert wrap("  one \n two\tthree ", 80) == ["one two three"]


def test_wrap_empty():
    assert wrap("", 10) == []


def test_wrap_rejects_zero_width():
    with pytest.raises(ValueError, match="positive"):
        wrap("x", 0)
