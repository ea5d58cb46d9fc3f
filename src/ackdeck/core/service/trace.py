"""A line's journey for every door: `trace(room, label, offset=…)` or `(…, match=TEXT)`.

Each traced line comes back as a `LineTrace` that knows its JSON and its one-line verdict
(`summary`: "unread for 14m05s", "read 2 times, last by agent via cli 3m ago; not acked",
"acked by agent 40s after its push"), taken against one clock reading so every door agrees.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ackdeck.core.base.text import age_text, counted, display
from ackdeck.core.errors import InvalidInput
from ackdeck.core.inbox.results import age
from ackdeck.core.service.results import Result

if TYPE_CHECKING:
    from collections.abc import Callable

    from ackdeck.core.inbox.journey import Hop, Journey
    from ackdeck.core.inbox.room_backend import RoomBackend


class ReadHop(Result):
    hop: Hop

    SHAPE = {"session": str, "reader": str | None, "door": str, "at": float}

    def source(self) -> Hop:
        return self.hop


class LineTrace(Result):
    journey: Journey
    now: float

    SHAPE = {
        "offset": int | str,
        "present": bool,  # still in the room
        "text": str | None,  # None once acked (the room keeps no copy)
        "pushed_at": float | None,
        "pushed": bool,  # pushed_at is the push itself (False: when ackdeck first saw it)
        "age": float | None,  # seconds since pushed_at
        "reads": list[ReadHop],
        "deliveries": int,  # reads that handed it out (while present: without an ack since)
        "acked_at": float | None,
        "acked_by": str | None,
        "dead_at": float | None,
        "dead_room": str | None,
        "summary": str,
    }

    def source(self) -> Journey:
        return self.journey

    @property
    def text(self) -> str | None:
        raw = self.journey.text
        return None if raw is None else display(raw)

    @property
    def age(self) -> float | None:
        return age(self.journey.pushed_at, self.now)

    @property
    def reads(self) -> list[ReadHop]:
        return [ReadHop(h) for h in self.journey.reads]

    @property
    def deliveries(self) -> int:
        return len(self.journey.reads)

    @property
    def summary(self) -> str:
        j = self.journey
        if j.dead_at is not None:
            return (
                f"moved to the dead-letter room {j.dead_room} after {len(j.reads)} "
                f"delivery(ies) without an ack"
            )
        if j.acked_at is not None:
            after = age(j.pushed_at, j.acked_at)
            when = f" {age_text(after)} after its push" if after is not None else ""
            return f"acked by {j.acked_by}{when}"
        if not j.reads:
            return f"unread for {age_text(self.age)}"
        last = j.reads[-1]
        return (
            f"read {counted(len(j.reads), 'time')}, last by {last.session} via {last.door} "
            f"{age_text(age(last.at, self.now))} ago; not acked"
        )

    def report(self) -> list[str]:
        """The journey as lines of text (the CLI prints them, the dashboard shows them)."""
        j = self.journey
        gone = "(no longer in the room)"
        out = [f"offset {j.offset}: {self.text if self.text is not None else gone}"]
        if j.pushed_at is not None:
            out.append(f"  {'pushed' if j.pushed else 'first seen':<10} {_when(j.pushed_at)}")
        for hop in j.reads:
            via = hop.door if hop.reader is None else f"{hop.door} ({hop.reader})"
            out.append(f"  {'read':<10} {_when(hop.at)} by {hop.session} via {via}")
        if j.acked_at is not None:
            out.append(f"  {'acked':<10} {_when(j.acked_at)} by {j.acked_by}")
        if j.dead_at is not None:
            out.append(f"  {'dead':<10} {_when(j.dead_at)} moved to {j.dead_room}")
        out.append(f"  => {self.summary}")
        return out


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


class Trace(Result):
    room: str
    path: str
    matched: int  # lines that matched (a text match; 1 for an offset)
    lines: list[LineTrace]

    SHAPE = {"room": str, "path": str, "matched": int, "lines": list[LineTrace]}


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
    if (offset is None) == (match is None):
        raise InvalidInput("trace takes an offset or a text to match, not both")
    if offset is not None:
        journeys, matched = [room.trace(offset)], 1
    else:
        assert match is not None
        found, matched = room.find(match)
        journeys = [room.trace(at) for at in found]
    now = clock()
    return Trace(label, str(room.path), matched, [LineTrace(j, now) for j in journeys])
