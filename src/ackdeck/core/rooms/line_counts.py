"""A room file's newline counts kept between looks, so a status counts only what was appended.

`Room.status` counts every newline of the file (pending lines) and where each session's read
ends. A dashboard asks for that every time a room changes; recounting a 10,000-line room for
one pushed line was the whole cost of a busy dashboard. `LineCounts` remembers, per file, the
newlines before a few offsets (0, the end it counted to, each session's cut) and counts only
the bytes past what it saw, as long as the file is provably the same one, only appended to:
the ledger's own rule (`ledger.matches`: same inode and birth time, not shrunk, the same mtime
at the same size, the same head) plus the same epoch and base, and the last bytes it counted
still in place (a rewrite that kept the head and grew the file is then caught too, unless it
also kept those bytes). Anything else recounts from the start.

Pure bookkeeping over an open descriptor: no locks, no writes; the caller holds the room's
shared lock as for any status.
"""

from __future__ import annotations

import bisect
import os

from ackdeck.core.base.byteio import newline_census
from ackdeck.core.rooms.file import ledger as L

# Bytes before the counted end that must be unchanged for the counts to be reused.
TAIL_BYTES = 256


class LineCounts:
    """Newline counts of one room file; reset whenever the file is not the one counted."""

    __slots__ = ("_epoch", "_ident", "_last_end", "_marks", "_size", "_tail", "recounts")

    def __init__(self) -> None:
        self._ident: L.FileIdentity | None = None
        self._epoch = (-1, -1)  # the ledger's (epoch, base) when counted
        self._size = 0  # bytes counted
        self._last_end = 0  # just past the last newline counted
        self._tail = b""  # the last TAIL_BYTES bytes counted
        self._marks: dict[int, int] = {0: 0}  # offset -> newlines before it
        self.recounts = 0  # counts from the start (tests and the bench read it)

    def census(
        self,
        fd: int,
        st: L.FileStat,
        head: bytes,
        epoch: tuple[int, int],
        cuts: list[int],
    ) -> tuple[int, int, dict[int, int]]:
        """What `newline_census(fd, st.size, cuts)` returns, reading only the new bytes (and
        from the nearest known offset for a cut inside the counted part).

        `head` holds the file's first `ledger.HEAD_BYTES` bytes; `epoch` is the settled
        ledger's (epoch, base): a new epoch restarts the offsets even on the same file.
        """
        if not self._still_valid(fd, st, head, epoch):
            self.recounts += 1
            self._epoch, self._size, self._last_end, self._tail = epoch, 0, 0, b""
            self._marks = {0: 0}
        old, marks = self._size, self._marks
        known = sorted(marks)
        before: dict[int, int] = {}
        for c in cuts:
            if c <= 0:
                before[c] = 0
            elif c in marks:
                before[c] = marks[c]
            elif c < old:
                m = known[bisect.bisect_right(known, c) - 1]
                before[c] = marks[m] + newline_census(fd, c, [], start=m)[0]
        # The appended bytes, and the cuts that fall in them (a cut past the end: the total).
        n, last_end, got = newline_census(fd, st.size, [c for c in cuts if c > old], start=old)
        total = marks[old] + n
        before.update((c, marks[old] + v) for c, v in got.items())
        if n:
            self._last_end = last_end
        # If the file shrank while being read, the next look sees it smaller and recounts.
        self._size = size = max(old, st.size)
        kept = {0: 0, size: total}
        kept.update((c, v) for c, v in before.items() if 0 < c < size)
        self._marks = kept
        start = max(0, size - TAIL_BYTES)
        self._tail = os.pread(fd, size - start, start) if size else b""
        self._ident = L.identity_of(st, head)
        return total, self._last_end, before

    def _still_valid(self, fd: int, st: L.FileStat, head: bytes, epoch: tuple[int, int]) -> bool:
        ident = self._ident
        if ident is None or epoch != self._epoch or st.size < self._size:
            return False
        if not L.matches(ident, st, head):
            return False
        return os.pread(fd, len(self._tail), self._size - len(self._tail)) == self._tail
