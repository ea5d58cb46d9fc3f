"""The one wait of the tests: `eventually(condition)` looks until the condition holds, with a
generous bound that only a real hang reaches, never a fixed sleep. `eventually_async` is the
same look from inside an event loop (a Textual pilot's or asyncio's), which it must not block.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

# Only a real hang reaches this: a loaded machine (2 shared cores, a parallel suite) can take
# seconds for what takes milliseconds alone.
WAIT = 60.0


def _looks(timeout: float, what: str) -> Iterator[None]:
    """One step per look until `timeout` has passed, then a failure that says `what` never
    came (one clock, one message for every wait)."""
    deadline = time.monotonic() + timeout
    while True:
        yield
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def eventually(
    condition: Callable[[], T],
    *,
    timeout: float = WAIT,
    what: str = "the condition",
    every: float = 0.02,
) -> T:
    """The first true value `condition()` returns, looking every `every` seconds."""
    for _ in _looks(timeout, what):
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("unreachable")  # pragma: no cover - _looks raises first


async def eventually_async(
    condition: Callable[[], T | Awaitable[T]],
    *,
    pilot: Any = None,
    timeout: float = WAIT,
    what: str = "the condition",
    every: float = 0.01,
) -> T:
    """`eventually` inside an event loop, where a look may itself be awaited (an MCP call):
    between looks it yields to the loop, through the Textual `pilot`'s pause when given (which
    also lets the screen refresh)."""
    for _ in _looks(timeout, what):
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if pilot is not None:
            await pilot.pause(every)
        else:
            await asyncio.sleep(every)
    raise AssertionError("unreachable")  # pragma: no cover - _looks raises first
