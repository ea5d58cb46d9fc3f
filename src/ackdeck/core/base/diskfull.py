"""Writes that meet a full disk (ENOSPC) or an exhausted quota (EDQUOT) and must not be lost.

A supervisor lives for its whole run and is the only process that knows the run's matches and
exit status. When a write fails because space ran out, it keeps what it meant to write in
memory and tries again with backoff (`Backoff`) until space is back; other write failures
are real faults and still raise. See notes/ISSUE-21.md for what is kept and for how long.
"""

from __future__ import annotations

import errno
import time

# On the hot path (tests/test_layering.py): typing is for type checkers only, and so is
# collections.abc (it imports collections: a run's supervisor, issue 43).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    T = TypeVar("T")

NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
FIRST_WAIT = 0.05  # seconds before the first retry; doubled after each failure
MAX_WAIT = 2.0  # the longest wait between two tries


def is_no_space(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in NO_SPACE


class Backoff:
    """When a write that found no space may be tried again: FIRST_WAIT, doubling to MAX_WAIT."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._wait = 0.0
        self._at = 0.0
        self.failures = 0  # since the last success

    @property
    def waiting(self) -> bool:
        return self.failures > 0

    def due(self) -> bool:
        return self._clock() >= self._at

    def due_in(self) -> float:
        return max(0.0, self._at - self._clock())

    def failed(self) -> None:
        self.failures += 1
        self._wait = min(MAX_WAIT, max(FIRST_WAIT, self._wait * 2))
        self._at = self._clock() + self._wait

    def succeeded(self) -> None:
        self.failures = 0
        self._wait = 0.0
        self._at = 0.0

    def until_written(self, write: Callable[[], T]) -> T:
        """`write()`, tried again after each ENOSPC/EDQUOT until it succeeds (never gives up:
        what it writes exists nowhere else). Any other error raises at once."""
        while True:
            try:
                done = write()
            except OSError as exc:
                if not is_no_space(exc):
                    raise
                self.failed()
                time.sleep(self.due_in())
                continue
            self.succeeded()
            return done
