"""What a room's operations return, whichever backend: a notification file
(core/inbox/rooms.py) or a redis stream (core/inbox/redis_room.py). One type per concept; the
service passes them through (core/service/rooms.py).

Offsets are bytes (`int`) in a file room and entry IDs (`"1700000000000-0"`) in a redis room;
doors print them, never do arithmetic on them."""

from __future__ import annotations

from pathlib import Path

from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import InvalidInput

# A read returns a page: at most this many bytes of whole lines (a single longer line is
# returned alone, whole: a line is never cut), so a read's memory, its receipt and the reply a
# door writes are bounded by the page, not by the room. What is left says `waiting`; each read
# after an ack returns the next page. Doors may ask for another size (`room read --max-bytes`).
PAGE_BYTES = 1 << 20
# A redis room's page is also at most this many entries (fetched at once, before the byte
# limit cuts them).
PAGE_ENTRIES = 10_000


def check_page(max_bytes: int) -> int:
    """A page size a caller asked for: a positive number of bytes."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise InvalidInput(f"a read's page must be a positive number of bytes, not {max_bytes!r}")
    return max_bytes


class ReadResult(Struct):
    lines: list[bytes]
    start: int | str  # a file's logical byte offset, or a redis entry ID ("" when none read)
    end: int | str
    epoch: int
    # The complete lines as one buffer (exactly the bytes a receipt records), for doors that
    # write them out unchanged.
    data: bytes = b""
    # Complete lines in the room after this page that the read did not return (the page was
    # full): read again once these are acked.
    waiting: int = 0


class AckResult(Struct):
    # ledger.AckMode (prefix | noop | stale | all): a type checker's alias only, and the JSON
    # shape is generated from this annotation at run time, so it is declared as its str.
    mode: str
    acked: int
    preserved: int
    message: str
    lines: list[bytes] | None = None  # only for ack-all


class SessionStatus(Struct):
    in_flight: int
    unread: int
    # When the in-flight read was taken (None: nothing in flight), and when the session's
    # oldest unread line was first seen (None: nothing unread, or not known).
    read_at: float | None = None
    oldest_unread_at: float | None = None


class RoomStatus(Struct):
    path: Path | str  # a file's path, or a redis room's URL without its password
    exists: bool
    pending: int
    partial_bytes: int  # always 0 in a redis room: an entry is added whole
    acked_total: int
    preserved_total: int
    pushed_total: int  # a file's base + size; a redis stream's entries ever added
    epoch: int
    last_ack_at: float | None
    sessions: dict[str, SessionStatus] = {}  # copied per instance by Struct
    # Late unlocked writers: lines carried in from replaced inodes (ever), and replaced inodes
    # kept past their grace period right now because a process still holds them open (file
    # rooms only: XADD has no such window).
    late_total: int = 0
    held_open: int = 0
    # Ages (core/inbox/seen_marks.py): the clock when this status was taken, when the oldest
    # line in the room and the oldest line no session has read were first seen.
    checked_at: float | None = None
    oldest_pending_at: float | None = None
    oldest_unread_at: float | None = None
    deliveries: int = 0  # how many reads handed out the oldest line (core/inbox/readlog.py)
    reads_unlogged: int = 0  # reads the log is missing (it could not be written)
    # The room's policy (core/inbox/policy.py) and the lines it sent to the dead-letter room.
    overdue_after: float | None = None
    max_deliveries: int | None = None
    owner: str | None = None
    dead_total: int = 0
