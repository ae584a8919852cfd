from wordwrap import justify


def test_justify_pads_inner_gaps():
    assert justify(["the quick", "fox"], 11) == ["the   quick", "fox"]


def test_justify_spreads_extra_left_first():
    assert justify(["a b c", "end"], 8) == ["a   b  c", "end"]


def test_justify_single_word_line():
    assert justify(["word", "last line"], 10) == ["word", "last line"]
