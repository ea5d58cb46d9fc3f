"""First-seen marks: when each line of a file room was first known to exist, for its age.

A mark `(end, at)` says "every byte before logical offset `end` was in the room at time `at`".
A line `[start, end)` was therefore first seen at the earliest `at` of the marks with an offset
of at least `end`. Push writes one after its append (exact: the line's push time); any ackdeck
process that looks at the room (read, status) writes one when the room holds complete bytes
past the newest mark, so a line an unlocked producer appended (`printf >> room`) is dated by
the first ackdeck process that saw it: its age is a lower bound, off by at most the time
between the append and that look.

The file (`<sidecar>/seen`) is a sequence of fixed-width records, `OFFSET KMILLIS\\n` (K: `+`
a push, ` ` a look), each
appended by one O_APPEND write (concurrent writers never interleave; kill -9 cannot split a
write). Fixed width lets a lookup bisect a room pushed a million times instead of parsing it.
Concurrent pushers may append their marks slightly out of offset order, so a lookup also
looks at a window around the bisection point. A record torn by a full disk shifts the rest
out of alignment: such a file is read record by record (by newline), skipping bad records,
and the next compaction rewrites it whole.

Marks are hints for ages, never for what an ack removes: a lost or damaged mark can only make
an age unknown or younger, never lose a line.
"""

from __future__ import annotations

import os
import stat

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.byteio import data_extents, pread_chunks

NAME = locations.SEEN_MARKS
WIDTH = 34  # 19 digits offset, kind, 13 digits milliseconds, newline
PUSHED, SEEN = b"+", b" "  # the kinds: a push's own mark (exact), or a look (a lower bound)
_WINDOW = 64  # records either side of the bisection point (concurrent pushers' disorder)
_TAIL = 8  # records the newest offset is taken from
COMPACT_AT = 1 << 20  # bytes of marks at or below the room's base before an ack compacts them


def record(end: int, at: float, kind: bytes = SEEN) -> bytes:
    return b"%019d%s%013d\n" % (end, kind, int(at * 1000))


def _parse(rec: bytes) -> tuple[int, float, bool] | None:
    """(offset, time, pushed) of one record, None if it is not one."""
    if len(rec) != WIDTH or rec[19:20] not in (PUSHED, SEEN) or rec[-1:] != b"\n":
        return None
    off, ms = rec[:19], rec[20:33]
    if not (off.isdigit() and ms.isdigit()):
        return None
    return int(off), int(ms) / 1000, rec[19:20] == PUSHED


def append(path: str, end: int, at: float, kind: bytes = SEEN) -> bool:
    """Append one mark (the room's lock held, shared or exclusive: a compaction renames the
    file under the exclusive one). False when it cannot be written (a full disk): an age
    becomes unknown or younger, and nothing else depends on it, so nothing is raised."""
    # O_NONBLOCK: a FIFO in the file's place fails the open (ENXIO) instead of blocking the
    # push or read that marks; a directory fails it too (EISDIR). Either is "not written".
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:
            atomic.make_dir(os.path.dirname(path))  # the sidecar's journey/
            fd = os.open(path, flags, 0o600)
        try:
            return os.write(fd, record(end, at, kind)) == WIDTH
        finally:
            os.close(fd)
    except OSError:
        return False


class Marks:
    """The marks of one room, read from its sidecar's `seen` file (absent: no marks)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def _open(self) -> int | None:
        """The marks file open for reading; None when there is none, or when what is there is
        no regular file (a FIFO would block every push and read, a directory fail them: the
        marks are a side record, and no marks only makes ages unknown)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        return fd

    def newest_end(self) -> int:
        """The largest offset among the last records (0 without marks): cheap, the tail only."""
        fd = self._open()
        if fd is None:
            return 0
        try:
            return newest_end_of(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)

    def first_seen(self, ends: list[int]) -> dict[int, float | None]:
        """For each line end offset: the earliest time a mark says it existed (None: unknown)."""
        return {e: None if m is None else m[0] for e, m in self.first_marks(ends).items()}

    def first_marks(self, ends: list[int]) -> dict[int, tuple[float, bool] | None]:
        """For each line end offset: (the earliest time a mark says it existed, whether that
        mark is the line's own push); None when no mark dates it."""
        fd = self._open()
        if fd is None:
            return {e: None for e in ends}
        try:
            size = os.fstat(fd).st_size
            if size % WIDTH:
                return _scan(_all_records(fd, size), ends)
            return {e: _bisect(fd, size // WIDTH, e) for e in ends}
        finally:
            os.close(fd)

    def compact(self, base: int) -> None:
        """Drop marks no line in the room can use any more (offset <= `base`), once they are a
        large part of the file. Exclusive room lock held (no concurrent appender)."""
        fd = self._open()
        if fd is None:
            return
        try:
            size = os.fstat(fd).st_size
            if size < COMPACT_AT:
                return
            recs = _all_records(fd, size)
        finally:
            os.close(fd)
        keep = [r for r in recs if r[0] > base]
        if len(recs) - len(keep) < len(recs) // 2 and size % WIDTH == 0:
            return
        data = b"".join(record(o, t, PUSHED if p else SEEN) for o, t, p in keep)
        from pathlib import Path  # an ack's compaction; never a push (no pathlib there)

        atomic.atomic_write(Path(self.path), data, fsync=False)


def newest_end_of(fd: int, size: int) -> int:
    """Marks.newest_end of the marks file open at `fd`, `size` bytes long."""
    # A few records: concurrent pushers append their marks only slightly out of order.
    tail = os.pread(fd, WIDTH * _TAIL, max(0, size - WIDTH * _TAIL))
    best = 0
    for line in tail.split(b"\n")[1:-1] if size > len(tail) else tail.split(b"\n")[:-1]:
        got = _parse(line + b"\n")
        if got is not None and got[0] > best:
            best = got[0]
    return best


def _all_records(fd: int, size: int) -> list[tuple[int, float, bool]]:
    """Every record of a file out of alignment, line by line (a line's last WIDTH - 1 bytes:
    a record a torn one was glued onto). In steps, over the file's data only: a sparse file's
    holes are not read (NUL bytes hold no record), and no more than a step is held."""
    out = []

    def take(line: bytes) -> None:
        got = _parse(line[-(WIDTH - 1) :] + b"\n") if len(line) >= WIDTH - 1 else None
        if got is not None:
            out.append(got)

    for start, end in data_extents(fd):
        carry = b""
        for chunk in pread_chunks(fd, start, min(end, size), size=1 << 20):
            lines = (carry + chunk).split(b"\n")
            carry = lines.pop()[-(WIDTH - 1) :]  # only a record's width of it can matter
            for line in lines:
                take(line)
        take(carry)
    return out


def _earliest(recs: list[tuple[int, float, bool]], end: int) -> tuple[float, bool] | None:
    """The earliest of the records that reach `end` (a push's own mark wins a tie)."""
    got = [(t, not p) for o, t, p in recs if o >= end]
    if not got:
        return None
    t, not_pushed = min(got)
    return t, not not_pushed


def _scan(
    recs: list[tuple[int, float, bool]], ends: list[int]
) -> dict[int, tuple[float, bool] | None]:
    return {e: _earliest(recs, e) for e in ends}


def _at(fd: int, i: int) -> tuple[int, float, bool] | None:
    return _parse(os.pread(fd, WIDTH, i * WIDTH))


def _bisect(fd: int, n: int, end: int) -> tuple[float, bool] | None:
    lo, hi = 0, n
    while lo < hi:  # the first record (in file order) whose offset reaches `end`
        mid = (lo + hi) // 2
        got = _at(fd, mid)
        if got is not None and got[0] >= end:
            hi = mid
        else:
            lo = mid + 1
    first = max(0, lo - _WINDOW)
    chunk = os.pread(fd, WIDTH * (2 * _WINDOW + 1), first * WIDTH)
    recs = [_parse(chunk[k : k + WIDTH]) for k in range(0, len(chunk), WIDTH)]
    return _earliest([r for r in recs if r is not None], end)
