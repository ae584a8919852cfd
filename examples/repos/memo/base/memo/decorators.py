"""Memoization on top of LRUCache."""

import functools

from memo.cache import LRUCache

_MISSING = object()


def memoize(maxsize=128):
    """Cache results of a function of hashable positional arguments."""

    def decorate(func):
        cache = LRUCache(maxsize)

        @functools.wraps(func)
        def wrapper(*args):
            result = cache.get(args, _MISSING)
            if result is _MISSING:
                result = func(*args)
                cache.put(args, result)
            return result

        wrapper.cache = cache
        return wrapper

    return decorate
