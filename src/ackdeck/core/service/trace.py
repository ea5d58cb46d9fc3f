"""A line's journey for every door: `trace(room, label, offset=…)` or `(…, match=TEXT)`.

Each traced line comes back as the room's `Journey` (`LineTrace` here), which knows its JSON
and its one-line verdict (`summary`: "unread for 14m05s", "read 2 times, last by agent via cli
3m ago; not acked", "acked by agent 40s after its push"), taken against one clock reading so
every door agrees.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.journey import Hop, Journey

if TYPE_CHECKING:
    from collections.abc import Callable

    from ackdeck.core.rooms.room_backend import RoomBackend


# A read that handed a line out, and a line's journey, are the room's own values
# (core/rooms/journey.py); these names are the ones the doors use.
ReadHop = Hop
LineTrace = Journey


class Trace(Struct):
    room: str
    path: str
    matched: int  # lines that matched (a text match; 1 for an offset)
    lines: list[Journey]


def looks_like_offset(text: str) -> bool:
    """Is what a person typed an offset (`123`) or an entry ID (`1700000000000-0`), rather than
    text to match? (The dashboard's one box takes either.)"""
    head, _, tail = text.strip().partition("-")
    return head.isdigit() and (tail == "" or tail.isdigit())


def trace(
    room: RoomBackend,
    label: str,
    *,
    offset: int | str | None = None,
    match: str | bytes | None = None,
    clock: Callable[[], float] = time.time,
) -> Trace:
    """The journey of the line at `offset`, or of the lines now in the room holding `match`."""
    if offset is None and match is None:
        raise InvalidInput(
            "trace needs the line: its OFFSET (as `push --json` prints) or --match TEXT"
        )
    if offset is not None and match is not None:
        raise InvalidInput("trace takes an offset or a text to match, not both")
    if offset is not None:
        journeys, matched = [room.trace(offset)], 1
    else:
        assert match is not None
        found, matched = room.find(match)
        journeys = [room.trace(at) for at in found]
    now = clock()
    journeys = _with_claims(room, journeys, now)
    return Trace(label, str(room.path), matched, [j.replace(now=now) for j in journeys])


def _with_claims(room: RoomBackend, journeys: list[Journey], now: float) -> list[Journey]:
    """A queue room's lines with each claim, expiry and completion (core/rooms/queue.py)."""
    from ackdeck.core.errors import AckdeckError
    from ackdeck.core.rooms.journey import claim_hops

    try:
        if not journeys or not room.policy().queue:
            return journeys
    except AckdeckError:
        return journeys  # a policy that cannot be read: the trace as for any room
    from ackdeck.core.service.queue import file_queue

    q = file_queue(room)
    out = []
    for j in journeys:
        raw = q.history(j.offset)  # type: ignore[arg-type]
        out.append(j.replace(claims=claim_hops(raw, now)) if raw else j)
    return out
