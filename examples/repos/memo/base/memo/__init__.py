"""A bounded LRU cache and a memoizing decorator."""

from memo.cache import LRUCache
from memo.decorators import memoize

__all__ = ["LRUCache", "memoize"]
