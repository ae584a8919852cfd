from memo import memoize


def test_memoize_calls_once():
    calls = []

    @memoize(maxsize=4)
    def square(x):
        calls.append(x)
        return x * x

    assert [square(3), square(3), square(4)] == [9, 9, 16]
    assert calls == [3, 4]


def test_memoize_keeps_name():
    @memoize()
    def add(a, b):
        return a + b

    assert add.__name__ == "add"
    assert add(1, 2) == 3
