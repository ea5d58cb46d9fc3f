"""Wakes about a room (not a process): an overdue episode, lines moved to the dead-letter room.
They go into the owner session's wake store as a record `room@NAME-ID`, drained like any other
wake (Stop hook, `wakes drain`, MCP); each event is its own run id, so none replaces another.
ID is a digest of the room's path or URL: rooms of one name in two projects are two records."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from pathlib import Path

from ackdeck.core.base.struct import Struct


class _Line(Struct):  # what a record's merge takes of a matched line
    start: int
    end: int
    text: str


def wake_name(label: str, identity: str) -> str:
    """The record of a room: `room@NAME-ID`, NAME cut to what a record name may hold, ID
    from `identity` (the room's path or URL)."""
    ident = hashlib.sha256(identity.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return "room@" + re.sub(r"[^A-Za-z0-9._@-]", "_", label)[-100:] + "-" + ident


def tell(
    home: Path,
    owner: str,
    label: str,
    identity: str,
    event: str,
    text: str,
    *,
    count: int = 1,
    clock: Callable[[], float] = time.time,
) -> None:
    """Merge one wake line `text` about room `label` (`identity`: its path or URL) for `owner`
    (`event`: overdue, dead)."""
    from ackdeck.core.monitors import wakes

    now = clock()
    wakes.merge(
        home,
        owner,
        wake_name(label, identity),
        run_id=f"{event}-{int(now * 1000)}",
        kind="match",
        lines=[_Line(0, 0, text)],  # type: ignore[list-item]
        filter=event,
        exclude=False,
        matches=count,
        status=event,
        clock=clock,
    )
