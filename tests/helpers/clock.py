"""The tests' one clock: a time a test sets by hand, so ages and deadlines are exact."""

from __future__ import annotations


class Clock:
    """Called like `time.time`; a test moves `t` (`clock.t += 61`), nothing else does."""

    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t
