"""The rule that stops a run failing on its configuration: when the first episodes (or grading jobs) of a run all end
in a ConfigError and none ends otherwise, the configuration is wrong, not the rows, so the command stops with one
line (exit 3) instead of writing one identical error record per row (docs/reliability.md, "A run that fails on its
configuration").

`ConfigErrorStop` sits between a command's results and its output: it holds back error records while every result
so far is a configuration error; the first result of another kind releases them (in order) and the rule is off for
the rest of the run; the `after`-th configuration error in a row, or the end of a run that had nothing else, raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from swerl_cli.core.errors import ConfigError

R = TypeVar("R")
PREFIX = "ConfigError: "  # how a record's error names its kind (f"{type(e).__name__}: {e}")
STOP_AFTER = 3  # configuration errors in a row, before any other result, that stop a run


class ConfigErrorStop(Generic[R]):
    """Hold results while all of them are configuration errors; `error_of(result)` is its error text or None."""

    def __init__(self, error_of: Callable[[R], str | None], what: str = "episodes", after: int = STOP_AFTER):
        self.error_of, self.what, self.after = error_of, what, after
        self.held: list[R] = []
        self.decided = False  # a result other than a configuration error came: every later one passes through

    def push(self, result: R) -> list[R]:
        """The results to write now (none while held); ConfigError at the `after`-th configuration error in a row."""
        if self.decided:
            return [result]
        error = self.error_of(result)
        if error is not None and error.startswith(PREFIX):
            self.held.append(result)
            if len(self.held) >= self.after:
                self._stop()
            return []
        self.decided = True
        out, self.held = [*self.held, result], []
        return out

    def finish(self) -> None:
        """At the end of the run: ConfigError when every result was a configuration error (fewer than `after`)."""
        if self.held and not self.decided:
            self._stop()

    def filter(self, results: Iterable[R]) -> Iterator[R]:
        """`results` as they may be written, then `finish()`."""
        for result in results:
            yield from self.push(result)
        self.finish()

    def _stop(self) -> None:
        first = str(self.error_of(self.held[0]))[len(PREFIX) :]
        n = len(self.held)
        some = f"the first {n} {self.what}" if n >= self.after else f"all {n} {self.what}"
        raise ConfigError(f"{some} failed on the configuration, none wrote a record; the first: {first}")
