"""The read log: every delivered read of a file room (who, through which door, which range,
when), beside the audit of acks, so a line's journey can be traced and its deliveries counted.

`<sidecar>/journey/reads.jsonl` holds one JSON object per read, appended with one O_APPEND
write (concurrent readers never interleave; kill -9 cannot split one write). A read is logged
after its lines were delivered and before its receipt is stored, so every receipt has its
entry; a reader killed between the two leaves an entry without a receipt, which is what
happened (the lines were handed out; the delivery count says so).

A log that cannot be written (a full disk, an I/O error) never blocks the read: the receipt
records that its read was not logged (`unlogged`, a per-session running count), and status
and trace say the log is incomplete by that many reads.

Bounded: past LIMIT bytes the log is rotated under the room's exclusive lock (an ack, or a
read that gets it without waiting) into `reads.1.jsonl`, and the entries that still describe
lines in the room are carried into the new log, so a delivery count never drops because of a
rotation. An entry cut short (a full disk mid-write) is skipped when read back, and the whole
entry a later writer glued onto it is recovered.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.byteio import data_extents
from ackdeck.core.base.jsonfields import parse as parse_json
from ackdeck.core.base.jsontext import dumps
from ackdeck.core.base.struct import Struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

DIR = locations.JOURNEY
LOG = locations.READ_LOG
OLD = locations.READ_LOG_OLD
LIMIT = 4 << 20
_START = b'{"id":'  # every entry starts so; a quote inside a value is always escaped


class ReadEntry(Struct):
    id: str  # also in the receipt of this read (ReceiptHeader.read_id)
    at: float
    session: str
    reader: str | None
    door: str
    epoch: int
    start: int  # logical [start, end) of the lines handed out
    end: int
    lines: int

    def covers(self, epoch: int, start: int) -> bool:
        """Did this read hand out the line that starts at `start` in `epoch`?"""
        return self.epoch == epoch and self.start <= start < self.end


def encode(entry: ReadEntry) -> bytes:
    """One log line: the entry's fields, in their declared order (`id` first: see _START)."""
    doc = {name: getattr(entry, name) for name in ReadEntry._fields}
    return dumps(doc, separators=(",", ":")).encode() + b"\n"


def new_id() -> str:
    return os.urandom(8).hex()


def append(directory: str, entry: ReadEntry) -> bool:
    """Log one read; False (nothing raised) when the log cannot be written. A short write
    (a full disk) leaves a fragment that read-back skips. O_NONBLOCK: a FIFO in the log's place
    fails the open instead of blocking the read that logs."""
    data = encode(entry)
    try:
        try:
            fd = os.open(
                os.path.join(directory, LOG),
                os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK,
                0o600,
            )
        except FileNotFoundError:
            atomic.make_dir(directory)
            fd = os.open(
                os.path.join(directory, LOG),
                os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK,
                0o600,
            )
        try:
            return os.write(fd, data) == len(data)
        finally:
            os.close(fd)
    except OSError:
        return False


def needs_rotation(directory: str) -> bool:
    try:
        return os.stat(os.path.join(directory, LOG)).st_size > LIMIT
    except OSError:
        return False


def decode(raw: bytes) -> list[ReadEntry]:
    """Every whole entry in `raw`, in order; torn fragments are skipped."""
    out: list[ReadEntry] = []
    for line in raw.split(b"\n")[:-1]:  # an unterminated last piece is no whole entry
        got = _entry(line)
        if got is None:
            at = line.rfind(_START)
            got = _entry(line[at:]) if at > 0 else None
        if got is not None:
            out.append(got)
    return out


def _entry(line: bytes) -> ReadEntry | None:
    try:
        d = parse_json(line)
        e = ReadEntry(
            str(d["id"]),
            float(d["at"]),
            str(d["session"]),
            d["reader"] if isinstance(d["reader"], str) else None,
            str(d["door"]),
            int(d["epoch"]),
            int(d["start"]),
            int(d["end"]),
            int(d["lines"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
    return e


def load(directory: str | Path) -> list[ReadEntry]:
    """The logged reads, oldest first (the rotated part, then the current one), each once."""
    entries: list[ReadEntry] = []
    for name in (OLD, LOG):
        fd = _open_log(os.path.join(directory, name), follow=True)
        if fd is None:
            continue
        try:
            entries.extend(_backwards(fd, 0, dead_margin=None))  # its data, never its holes
        finally:
            os.close(fd)
    seen: set[str] = set()
    unique = []
    for e in entries:
        if e.id not in seen:
            seen.add(e.id)
            unique.append(e)
    return unique


def live_entries(directory: str | Path, base: int) -> list[ReadEntry]:
    """The logged reads that handed out lines still in the room (`end > base`), oldest first.

    Reads are logged in time order and a room's logical end only grows, so these are a suffix
    of the log: it is read backwards until a few entries end at or before `base`, which keeps a
    status cheap on a long log (the cost grows with the oldest line's deliveries, never with
    the log's size: see `_backwards`)."""
    fd = _open_log(os.path.join(directory, LOG))
    if fd is None:
        if not os.path.lexists(os.path.join(directory, OLD)):
            return []  # no read was logged yet (the common case of a room nobody read)
        return [e for e in load(directory) if e.end > base]  # mid-rotation: reads.1 only
    try:
        # A margin of a few dead entries: concurrent readers append slightly out of order.
        return [e for e in _backwards(fd, base, dead_margin=8) if e.end > base]
    finally:
        os.close(fd)


def _open_log(path: str, *, follow: bool = False) -> int | None:
    """The log at `path` open for reading; None when it is missing or no regular file (a
    FIFO would block the status that reads it, a directory fail it: the read log is a side
    record, and without it a status only counts no deliveries)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


# Bytes of the log read per step backwards, and kept at most of one line: a whole entry is a
# few hundred bytes, so of a longer line (a torn entry a later one was glued onto, damage)
# only its end can hold one (see `decode`).
_STEP = 1 << 16
_LINE = 1 << 16


def _backwards(fd: int, base: int, dead_margin: int | None) -> list[ReadEntry]:
    """The whole entries of the log open at `fd`, oldest first, read from its end backwards
    until `dead_margin` entries ended at or before `base` (None: to its start).

    Linear and bounded: each byte is read and decoded once (a version that decoded the whole
    tail again at every step took 81 s over a 100 MB log), at most _LINE bytes of one line are
    kept, and the holes of a sparse file are skipped, not read (they are NUL bytes, which no
    entry holds): a log grown to a gigabyte by `truncate` costs what its data costs."""
    found: list[list[ReadEntry]] = []  # per step, newest step first
    dead = 0
    head = b""  # the end of the line the bytes read so far begin inside, its newline included
    for start, end in reversed(data_extents(fd)):
        pos = end
        while pos > start:
            step = min(pos - start, _STEP)
            pos -= step
            data = os.pread(fd, step, pos) + head
            cut = data.find(b"\n") + 1 if pos > 0 else 0
            if pos > 0 and cut == 0:
                head = data[-_LINE:]  # inside one long line: only its end can hold an entry
                continue
            head = data[:cut][-_LINE:]
            got = decode(data[cut:])
            found.append(got)
            dead += sum(e.end <= base for e in got)
            if dead_margin is not None and dead >= dead_margin:
                return [e for chunk in reversed(found) for e in chunk]
    if head:
        found.append(decode(head))
    return [e for chunk in reversed(found) for e in chunk]


def deliveries(entries: Iterable[ReadEntry], epoch: int, start: int) -> int:
    """How many reads handed out the line at `start` (still in the room, so never acked)."""
    return sum(e.covers(epoch, start) for e in entries)


def rotate(directory: str | Path, base: int) -> None:
    """Rotate an over-long log (exclusive room lock held: nobody appends meanwhile). Entries
    whose range reaches past `base` (lines still in the room) go on in the new log too."""
    live = os.path.join(directory, LOG)
    if not needs_rotation(str(directory)):
        return
    fd = _open_log(live)
    if fd is None:
        return  # gone, or no regular file: nothing to rotate
    try:
        current = _backwards(fd, base, dead_margin=None)  # its data only, never its holes
    finally:
        os.close(fd)
    keep = b"".join(encode(e) for e in current if e.end > base)
    tmp = atomic.write_temp(live, [keep], mode=0o600, fsync=False)
    try:
        # A crash between the two renames leaves the full log as reads.1 (nothing lost).
        os.replace(live, os.path.join(directory, OLD))
        os.replace(tmp, live)
    except BaseException:
        atomic.unlink_quietly(tmp)
        raise


def try_rotate(lock_file: str, directory: str | Path, base: int) -> None:
    """Rotate if the room's exclusive lock is free right now (a read must never wait on it)."""
    try:
        fd = os.open(lock_file, os.O_RDWR)
    except OSError:
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return
            raise
        try:
            rotate(directory, base)
        except OSError:
            return  # the next ack tries again; the log only grows meanwhile
    finally:
        os.close(fd)  # releases the flock
