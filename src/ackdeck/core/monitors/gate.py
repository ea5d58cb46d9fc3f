"""The wake gate: pure decisions about which matched lines a wake may still report.

A line is suppressed only if its owner session was shown that exact byte range in the same run.
Shown data is a sorted list of disjoint `[start, end)` intervals per (session, run), built from
the ranges of the lines each read returned. Lines partition `output.log`, so a line's range lies
inside the union of shown line ranges exactly when that very line was shown; merging adjacent
ranges therefore loses nothing. `None` means "shown data missing or unreadable": fail open.
"""

from __future__ import annotations

from bisect import bisect_right

from ackdeck.core.base.struct import Struct

TYPE_CHECKING = False  # collections.abc imports collections: not in a run's supervisor
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

Intervals = list[tuple[int, int]]


def add_range(intervals: Intervals, start: int, end: int) -> Intervals:
    """`intervals` plus `[start, end)`, kept sorted and merged (a new list)."""
    if end <= start:
        return list(intervals)
    out: Intervals = []
    placed = False
    for s, e in intervals:
        if e < start:
            out.append((s, e))
        elif end < s:
            if not placed:
                out.append((start, end))
                placed = True
            out.append((s, e))
        else:
            start, end = min(s, start), max(e, end)
    if not placed:
        out.append((start, end))
    return out


def add_ranges(intervals: Intervals, ranges: Iterable[tuple[int, int]]) -> Intervals:
    """Bulk version: ranges arrive in file order from a read, so one merge pass suffices."""
    merged = sorted([*intervals, *((s, e) for s, e in ranges if e > s)])
    out: Intervals = []
    for s, e in merged:
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def contains(intervals: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    """True if `[start, end)` lies inside one shown interval."""
    i = bisect_right(intervals, (start, float("inf"))) - 1
    return i >= 0 and intervals[i][0] <= start and end <= intervals[i][1]


def is_shown(shown: Intervals | None, start: int, end: int) -> bool:
    """Fail open: without shown data nothing counts as shown."""
    return shown is not None and contains(shown, start, end)


class Split(Struct):
    deliver: list[int]  # indexes of lines still to report
    suppress: list[int]  # indexes of lines the owner already saw (superseded)


def split_lines(
    lines: Sequence[tuple[str, int, int]], shown_by_run: Mapping[str, Intervals | None]
) -> Split:
    """Decide per line `(run_id, start, end)`; a run missing from the map fails open."""
    deliver: list[int] = []
    suppress: list[int] = []
    for i, (run_id, start, end) in enumerate(lines):
        if is_shown(shown_by_run.get(run_id), start, end):
            suppress.append(i)
        else:
            deliver.append(i)
    return Split(deliver, suppress)


def exit_notice_suppressed(kind: str, saw_end: bool | None) -> bool:
    """An `exited` notice is dropped when the owner's own read already reported the exit.

    A `monitor-lost` notice is never suppressed: no read can have shown that the monitor died.
    """
    return kind == "exited" and bool(saw_end)
