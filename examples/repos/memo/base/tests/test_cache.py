import pytest

from memo import LRUCache


def test_put_and_get():
    cache = LRUCache(2)
    cache.put("a", 1)
    assert cache.get("a") == 1
    assert cache.get("zzz", "none") == "none"
    assert (cache.hits, cache.misses) == (1, 1)


def test_evicts_oldest_insert():
    cache = LRUCache(2)
    for key in "abc":
        cache.put(key, key.upper())
    assert "a" not in cache
    assert cache.keys() == ["b", "c"]


def test_overwrite_refreshes():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 3)
    cache.put("c", 4)
    assert cache.keys() == ["a", "c"]
    assert cache.get("a") == 3


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        LRUCache(0)
