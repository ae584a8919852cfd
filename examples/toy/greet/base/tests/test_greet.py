from greet import greet


def test_greet_ends_with_bang():
    assert greet("x").endswith("!")
