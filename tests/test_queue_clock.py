"""Leases against a stepped clock, on a file room and on a redis room.

Leases are judged on the wall clock of the process that claims (the room's clock; a test
injects one): a lease's end is stored (SQLite, Redis) and read by other processes and, on
Redis, other hosts, where a monotonic clock means nothing (it is per boot and per host). What
a step does, pinned here:

- forward (or a claimer whose clock runs ahead): leases end early, the line is handed out
  again, and the first holder's done is refused: never completed twice; its work is wasted.
- backward: leases last longer by the step; nobody else may take the line meanwhile; the
  holder's done still counts; once the clock passes the end the line is claimable again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ackdeck.core.service.deck import Deck
from ackdeck.core.service.queue import TokenRefused
from tests.helpers.clock import Clock
from tests.helpers.queues import QueueRooms

HOUR = 3600.0


@pytest.fixture(params=["file", "redis"])
def rooms(request: pytest.FixtureRequest, tmp_path: Path) -> QueueRooms:
    server = request.getfixturevalue("redis_server") if request.param == "redis" else None
    return QueueRooms(request.param, tmp_path, server)


def test_a_clock_stepped_forward_hands_the_line_out_again_and_refuses_the_first_holder(
    rooms: QueueRooms, home: Path
) -> None:
    room = rooms.make("tasks.txt", [b"migrate the schema\n"])
    clock = Clock()
    first, second = (
        Deck(home, "first", [room], clock=clock),
        Deck(home, "second", [room], clock=clock),
    )
    mine = first.claim(first.rooms[0], lease=600)
    assert mine.token is not None
    clock.t += HOUR  # NTP steps the clock an hour forward mid-lease
    theirs = second.claim(second.rooms[0], lease=600)
    assert (theirs.line, theirs.deliveries) == (b"migrate the schema\n", 2)
    assert theirs.token is not None
    with pytest.raises(TokenRefused, match="superseded"):
        first.task(first.rooms[0], mine.token, "done")
    assert second.task(second.rooms[0], theirs.token, "done").mode == "done"
    assert rooms.lines(room) == [] and rooms.completed(room) == 1


def test_a_claimer_whose_clock_runs_ahead_takes_the_line_and_the_holder_is_refused(
    rooms: QueueRooms, home: Path
) -> None:
    # Two hosts (two clocks) on one queue: the second's clock is an hour ahead.
    room = rooms.make("tasks.txt", [b"a\n", b"b\n"])
    here, ahead = Clock(), Clock(1_000_000.0 + HOUR)
    a = Deck(home, "a", [room], clock=here)
    b = Deck(home, "b", [room], clock=ahead)
    mine = a.claim(a.rooms[0], lease=600)
    got = b.claim(b.rooms[0], lease=600)
    # To b's clock a's lease ended long ago: b is handed the same line (the oldest first).
    assert (got.line, got.deliveries) == (b"a\n", 2)
    assert mine.token is not None and got.token is not None
    with pytest.raises(TokenRefused, match="superseded"):
        a.task(a.rooms[0], mine.token, "done")
    b.task(b.rooms[0], got.token, "done")
    assert rooms.lines(room) == [b"b\n"] and rooms.completed(room) == 1


def test_a_clock_stepped_backward_lengthens_the_lease_and_loses_nothing(
    rooms: QueueRooms, home: Path
) -> None:
    room = rooms.make("tasks.txt", [b"a\n"])
    clock = Clock()
    holder, other = Deck(home, "holder", [room], clock=clock), Deck(home, "o", [room], clock=clock)
    mine = holder.claim(holder.rooms[0], lease=60)
    assert mine.token is not None and mine.lease_until is not None
    clock.t -= HOUR  # stepped an hour back: the lease now has an hour and a minute to run
    assert other.claim(other.rooms[0]).claimed is False
    clock.t = mine.lease_until - 1  # just before its end: still held
    assert other.claim(other.rooms[0]).claimed is False
    clock.t = mine.lease_until  # its end: the line is claimable again (a dead holder's)
    again = other.claim(other.rooms[0], lease=60)
    assert (again.line, again.deliveries) == (b"a\n", 2)
    with pytest.raises(TokenRefused):
        holder.task(holder.rooms[0], mine.token, "done")
    assert again.token is not None
    assert other.task(other.rooms[0], again.token, "done").mode == "done"
    assert rooms.lines(room) == [] and rooms.completed(room) == 1


def test_a_holder_stepped_backward_still_completes_its_own_line(
    rooms: QueueRooms, home: Path
) -> None:
    room = rooms.make("tasks.txt", [b"a\n"])
    clock = Clock()
    d = Deck(home, "s", [room], clock=clock)
    mine = d.claim(d.rooms[0], lease=60)
    assert mine.token is not None
    clock.t -= HOUR
    ext = d.task(d.rooms[0], mine.token, "extend", lease=60)
    # An extend is judged on the clock too: the new end is 60 s from the stepped clock,
    # earlier than the old one (the holder asked for 60 s from now).
    assert ext.lease_until == clock.t + 60
    assert d.task(d.rooms[0], mine.token, "done").mode == "done"
    assert rooms.lines(room) == []


def test_a_lease_judged_ended_before_a_backward_step_runs_again_after_it(
    rooms: QueueRooms, home: Path
) -> None:
    room = rooms.make("tasks.txt", [b"a\n", b"b\n", b"c\n"])
    clock = Clock()
    d = Deck(home, "s", [room], clock=clock)
    d.claim(d.rooms[0], lease=60)  # a
    d.claim(d.rooms[0], lease=60)  # b
    clock.t += 61  # both leases end; one claim takes a again, b waits claimable
    assert d.claim(d.rooms[0], lease=600).line == b"a\n"
    clock.t -= HOUR  # stepped back: b's lease runs again on this clock
    got = d.claim(d.rooms[0], lease=60)
    assert (got.line, got.deliveries) == (b"c\n", 1)  # not b: its lease has not ended
    clock.t += HOUR  # past b's end again
    again = d.claim(d.rooms[0], lease=60)
    assert (again.line, again.deliveries) == (b"b\n", 2)
