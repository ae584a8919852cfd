from greet.core import greet

__all__ = ["greet"]
