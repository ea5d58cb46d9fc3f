"""A redis room's lines, paged for display (`RedisRoomRef.lines()`): `LineIndex`'s reading side
over a stream (core/service/lines.py). Imported only for a redis room.

Plain I/O for worker threads, like `core.service.lines`. A file room's panel indexes
line offsets and reads the visible lines with `pread`; a redis room's lines live on the server,
so they are fetched with XRANGE in pages (through `RedisRoom.entries`, display only: no receipt)
and kept with their entry IDs. Acks remove a prefix of the stream, so a view whose oldest entry
is gone from the server is rebuilt (`head_moved`), as a file index is after an ack's rename;
otherwise new entries are fetched after the last ID held (`fetch`).

Thread model as `LineIndex`: one worker thread appends, the UI thread reads lines below the
count it was told about; the lists only grow, so those never change. The reading side is
`HeldLines`'s, shared with a Claude Code mailbox's lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ackdeck.core.rooms.redis.room import RedisRoom
from ackdeck.core.service.lines import HeldLines, equal_prefix

PAGE = 10_000  # entries per XRANGE: a page is about one round trip and a megabyte
FIRST_PAINT_ENTRIES = 2_000  # fetched before the first paint

Cancelled = Callable[[], bool]


def _never() -> bool:
    return False


class RedisLines(HeldLines):
    """The entries of one redis room fetched so far, oldest first."""

    def __init__(self, room: RedisRoom) -> None:
        super().__init__(room.close)
        self.room = room
        self.ids: list[str] = []

    def fetch(self, limit: int | None = None, cancelled: Cancelled = _never) -> bool:
        """Fetch entries after the last one held, up to `limit` of them (None: all). True
        when everything the stream held was fetched. Raises AckdeckError (unreachable...)."""
        got_total = 0
        while not cancelled():
            want = PAGE if limit is None else min(PAGE, limit - got_total)
            if want <= 0:
                return False
            page = self.room.entries(self.ids[-1] if self.ids else "", want)
            # Lines before IDs: a reader below `count` never finds a line missing.
            self.lines.extend(line for _, line in page)
            self.ids.extend(entry_id for entry_id, _ in page)
            got_total += len(page)
            if len(page) < want:
                return True
        return False

    # ----- paging (core.service.lines.LineSource) --------------------------------------------
    def first_page(self, cancelled: Cancelled = _never) -> bool:
        return self.fetch(FIRST_PAINT_ENTRIES, cancelled)

    def next_page(self, cancelled: Cancelled = _never) -> bool:
        return self.fetch(None, cancelled)

    def load_all(self) -> None:
        self.fetch()

    def catch_up(self) -> bool:
        if self.head_moved():
            return False  # a prefix was acked (or trimmed): the lines renumber
        self.fetch()  # only new entries: nothing was acked or trimmed meanwhile
        return True

    def head_moved(self) -> bool:
        """Is the oldest entry held gone from the server (acked, trimmed, recreated)?"""
        if not self.ids:
            return False
        first = self.room.entries("", 1)
        return not first or first[0][0] != self.ids[0]

    def same_prefix(self, lines: Sequence[bytes], start: int | str, upto: int) -> int:
        """How many of a read's first `lines` (starting at entry `start`) are the first `upto`
        entries held here: the same oldest entry (IDs are unique; acks remove only the
        oldest) and the same bytes."""
        if upto <= 0 or not self.ids or start != self.ids[0]:
            return 0
        return equal_prefix(lines, self.lines[:upto])
