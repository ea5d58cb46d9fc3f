"""The lines panel's helpers over a room's pages (core/service/lines.py): filtering lines and
showing names. No Textual here: plain functions, run in worker threads and tested on their own.

The pages themselves (the file line index, a redis room's entries) are the service's: a room
reference pages its lines (`RoomRef.lines()`); their names are re-exported here for the panel.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

from ackdeck.core.service.lines import (
    SHOWN_MAX,
    Cancelled,
    LineIndex,
    LineSource,
    Probe,
    display_text,
    equal_prefix,
    shown_text,
)

__all__ = [
    "SHOWN_MAX",
    "LineIndex",
    "LineSource",
    "Probe",
    "contains",
    "display_name",
    "display_text",
    "equal_prefix",
    "filter_lines",
    "shown_text",
]


def _never() -> bool:
    return False


def display_name(name: str) -> str:
    """A name (a room's file name, a path in a message) as text for the screen: control
    characters escaped (`\\x1b`: an ESC in a file name went raw to the terminal), undecodable
    bytes (surrogate escapes) as U+FFFD."""
    return display_text(name.encode("utf-8", "surrogateescape"))


def contains(needle: str) -> Callable[[bytes], bool]:
    """Does a line (raw bytes) contain `needle`, case-insensitively, as displayed?"""
    folded = needle.casefold().encode("utf-8", errors="replace")
    ascii_only = folded.isascii()

    def keeps(raw: bytes) -> bool:
        hay = raw.lower() if ascii_only else display_text(raw).casefold().encode()
        return folded in hay

    return keeps


def filter_lines(
    index: LineSource,
    needle: str | Callable[[bytes], bool],
    first: int,
    last: int,
    out: array,
    cancelled: Cancelled = _never,
    *,
    block: int = 65536,
) -> int:
    """Append to `out` the numbers of lines in [first, last) whose text contains `needle`
    (case-insensitive), or that `needle(raw)` keeps (a regex: tui.highlight.LineFilter).
    Returns the line it stopped at (last, unless cancelled)."""
    keeps = contains(needle) if isinstance(needle, str) else needle
    n = first
    while n < last:
        if cancelled():
            return n
        chunk = index.line_bytes(n, min(last, n + block))
        for i, raw in enumerate(chunk, n):
            if keeps(raw):
                out.append(i)
        n += len(chunk) or (last - n)
    return n
