"""Wakes about a room (not a process): an overdue episode, lines moved to the dead-letter room.
They go into the owner session's wake store as a record `room@NAME`, drained like any other
wake (Stop hook, `wakes drain`, MCP); each event is its own run id, so none replaces another."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from ackdeck.core.base.struct import Struct


class _Line(Struct):  # what a record's merge takes of a matched line
    start: int
    end: int
    text: str


def wake_name(label: str) -> str:
    """The record of a room: `room@NAME`, NAME cut to what a record name may hold."""
    return "room@" + re.sub(r"[^A-Za-z0-9._@-]", "_", label)[-120:]


def tell(
    home: Path,
    owner: str,
    label: str,
    event: str,
    text: str,
    *,
    count: int = 1,
    clock: Callable[[], float] = time.time,
) -> None:
    """Merge one wake line `text` about room `label` for `owner` (`event`: overdue, dead)."""
    from ackdeck.core.watch import wakes

    now = clock()
    wakes.merge(
        home,
        owner,
        wake_name(label),
        run_id=f"{event}-{int(now * 1000)}",
        kind="match",
        lines=[_Line(0, 0, text)],  # type: ignore[list-item]
        filter=event,
        exclude=False,
        matches=count,
        status=event,
        clock=clock,
    )
