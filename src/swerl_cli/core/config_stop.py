"""The rule that stops a run failing on its configuration: when the first episodes (or grading jobs) of a run all end
in a ConfigError and none ends otherwise, the configuration is wrong, not the rows, so the command stops with one
line (exit 3) instead of writing one identical error record per row (docs/reliability.md, "A run that fails on its
configuration").

`ConfigErrorStop` sits between a command's results and its output: it holds back error records while every result
so far is a configuration error; the first result of another kind releases them (in order) and the rule is off for
the rest of the run; the `after`-th configuration error in a row, or the end of a run that had nothing else, raises.

Given the backend's `unavailable` (why its engine cannot start sandboxes, or None), sandbox errors are held the same
way: when the first results all failed to get a sandbox and the engine does not answer at that moment, the run stops
with one line (exit 1: an infrastructure failure, not a row's) instead of writing an error record per row; when it
answers, the held records are written and the rule is off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from swerl_cli.core.errors import ConfigError, SandboxError

R = TypeVar("R")
PREFIX = "ConfigError: "  # how a record's error names its kind (f"{type(e).__name__}: {e}")
SANDBOX = "SandboxError: "  # a sandbox could not be had (an engine that does not answer, among others)
STOP_AFTER = 3  # configuration errors in a row, before any other result, that stop a run


class ConfigErrorStop(Generic[R]):
    """Hold results while all of them are configuration (or, with `unavailable`, sandbox) errors; `error_of(result)`
    is its error text or None."""

    def __init__(
        self,
        error_of: Callable[[R], str | None],
        what: str = "episodes",
        after: int = STOP_AFTER,
        unavailable: Callable[[], str | None] | None = None,
    ):
        self.error_of, self.what, self.after, self.unavailable = error_of, what, after, unavailable
        self.held: list[R] = []
        self.decided = False  # a result other than a held kind came: every later one passes through

    def _held_kind(self, error: str | None) -> bool:
        if error is None:
            return False
        return error.startswith(PREFIX) or (self.unavailable is not None and error.startswith(SANDBOX))

    def push(self, result: R) -> list[R]:
        """The results to write now (none while held); raises at the `after`-th held error in a row."""
        if self.decided:
            return [result]
        if self._held_kind(self.error_of(result)):
            self.held.append(result)
            return self._decide() if len(self.held) >= self.after else []
        return self._release(result)

    def finish(self) -> list[R]:
        """At the end of the run: raises when every result was a held kind (fewer than `after`), else the results
        still to write (held sandbox errors of an engine that answers)."""
        return self._decide() if self.held and not self.decided else []

    def filter(self, results: Iterable[R]) -> Iterator[R]:
        """`results` as they may be written, then `finish()`."""
        for result in results:
            yield from self.push(result)
        yield from self.finish()

    def _release(self, *extra: R) -> list[R]:
        self.decided = True
        out, self.held = [*self.held, *extra], []
        return out

    def _decide(self) -> list[R]:
        errors = [str(self.error_of(r)) for r in self.held]
        n = len(self.held)
        some = f"the first {n} {self.what}" if n >= self.after else f"all {n} {self.what}"
        if all(e.startswith(PREFIX) for e in errors):
            raise ConfigError(
                f"{some} failed on the configuration, none wrote a record; the first: {errors[0][len(PREFIX) :]}"
            )
        reason = self.unavailable() if self.unavailable is not None else None
        if reason is None:  # the engine answers: these failures are the rows' own, written as error records
            return self._release()
        raise SandboxError(
            f"{some} could not get a sandbox and the engine does not answer ({reason}); none wrote a record"
        )
