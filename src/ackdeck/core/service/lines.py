"""A room's lines, paged for display: a line-offset index over one open file, so a huge room
(or a process's output.log) is shown without loading it. `RoomRef.lines()` returns one (a redis
room's entries are paged by `core.service.redis_lines.RedisLines`, the same reading side), so
the dashboard never asks which backend a room is.

Display only: nothing here records a read or acks. Plain I/O that runs in worker threads and is
tested on its own; imported only by the doors that show lines (never on the hot path).

The index holds the start offset of every complete line (an `array('Q')`, 8 bytes per line, so a
1,000,000-line room costs 8 MB) and an open descriptor on the inode it describes. Lines are read
with `pread` only when they are shown, through a small LRU cache. Keeping the descriptor means the
index and the bytes it points into always agree, even after an ack renames a new file over the
path: the caller notices the new inode (`probe`, `catch_up`) and builds a fresh index.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, islice, repeat
from operator import add
from pathlib import Path
from typing import Protocol

from ackdeck.core.base.text import display, safe
from ackdeck.core.errors import RoomUnavailable
from ackdeck.core.rooms.file.sidecar import refuse_unless_regular

# Reads of this size keep the scan in C (bytes.split + itertools) instead of a Python loop per
# line, while the transient list of parts stays small (256 KB: ~9 MB peak for 1,000,000 lines,
# the index itself being 8 MB; 4 MB chunks cost ~30 MB for no speed gain).
CHUNK = 256 << 10
HEAD_BYTES = 4096
FIRST_PAINT_BYTES = 1 << 20  # index this much before the first paint
STEP_BYTES = 32 << 20  # then this much per step
# Bytes of one line that are shown. Every paint measures and crops each visible line's text, so
# a 50 MB single line held the UI thread for seconds at every refresh (keys answered ~4 s
# late); beyond this the line says how long it is. The bytes themselves are never cut.
SHOWN_MAX = 4096

Cancelled = Callable[[], bool]


def _never() -> bool:
    return False


def display_text(raw: bytes) -> str:
    """Bytes are the truth; they are decoded (with replacement) only to be shown, with every
    control and escape character shown escaped (core/base/text.py) and tabs expanded. Not cut
    by `safe`'s line limit: the panel bounds a line itself (SHOWN_MAX, with its length)."""
    return safe(display(raw), limit=None).expandtabs(4)


def shown_text(head: bytes, length: int) -> str:
    """A line of `length` bytes as the panel shows it, from its first bytes `head` (at least
    SHOWN_MAX of them when the line is longer): at most SHOWN_MAX bytes, then its length."""
    if length <= SHOWN_MAX:
        return display_text(head[:length])
    return display_text(head[:SHOWN_MAX]) + f" … [{length:,} bytes; first {SHOWN_MAX:,} shown]"


def scan_newlines(fd: int, start: int, stop: int, out: array, cancelled: Cancelled = _never) -> int:
    """Append to `out` the offset just past every newline in [start, stop). Returns the offset
    where scanning stopped (`stop`, or earlier if cancelled or the file is shorter)."""
    off = start
    while off < stop:
        if cancelled():
            return off
        chunk = os.pread(fd, min(CHUNK, stop - off), off)
        if not chunk:
            break
        parts = chunk.split(b"\n")
        if len(parts) > 1:
            first = off + len(parts[0]) + 1
            out.append(first)
            # Running sum of (len + 1) over the middle parts gives each following line end.
            ends = accumulate(
                map(add, map(len, islice(parts, 1, len(parts) - 1)), repeat(1)), initial=first
            )
            out.extend(islice(ends, 1, None))
        off += len(chunk)
    return off


def _not_regular(path: Path, mode: int) -> OSError:
    """The refusal core gives for a room that is not a regular file, as an OSError."""
    try:
        refuse_unless_regular(path.name, mode)
    except RoomUnavailable as exc:
        return OSError(errno.EINVAL, str(exc))
    return OSError(errno.EINVAL, f"{path.name} is not a regular file")


class LineSource(Protocol):
    """A room's lines (or a process's output) as the lines panel pages them: a file's
    `LineIndex`, or a `HeldLines` (a redis room's entries, a mailbox's), from `RoomRef.lines()`.

    Thread model: one worker thread loads (`first_page`, `next_page`, `load_all`, `catch_up`),
    the UI thread reads lines below the `count` it was told about; what is loaded only grows,
    so those never change. Loading raises OSError (FileNotFoundError: the file is gone) or
    AckdeckError (a redis server that does not answer).
    """

    @property
    def count(self) -> int: ...
    def line_bytes(self, first: int, last: int) -> list[bytes]: ...
    def line(self, n: int) -> str: ...
    def partial_bytes(self) -> int: ...
    def partial_text(self) -> str: ...
    def same_prefix(self, lines: Sequence[bytes], start: int | str, upto: int) -> int: ...

    def first_page(self, cancelled: Cancelled = _never) -> bool:
        """Load enough for a first paint; True when everything the source holds is loaded."""
        ...

    def next_page(self, cancelled: Cancelled = _never) -> bool:
        """Load the next step; True when everything the source holds is loaded."""
        ...

    def load_all(self) -> None:
        """Load everything the source holds now."""
        ...

    def catch_up(self) -> bool:
        """Load what was appended since the last load. False, loading nothing, when the lines
        held are no longer the source's first lines (an ack removed a prefix, the file was
        replaced or is gone): the caller opens the source anew (`RoomRef.lines()`)."""
        ...


def equal_prefix(a: Sequence[bytes], b: Sequence[bytes]) -> int:
    """The length of the common prefix of two lists of lines."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class HeldLines:
    """The reading side of a `LineSource` that holds its lines whole in memory: a redis
    room's entries (`redis_lines.RedisLines`) and a Claude Code mailbox's
    (`claude_team_ref.MailboxLines`). Entries are added whole, so there is never a partial
    line; subclasses load into `lines` (which only grows, as `LineSource` requires)."""

    def __init__(self, close: Callable[[], None]) -> None:
        self.lines: list[bytes] = []
        # The source's connection closes when the last reference goes: a worker may still be
        # loading into a view the UI has already replaced (as LineIndex's descriptor).
        self._finalizer = weakref.finalize(self, close)

    @property
    def count(self) -> int:
        return len(self.lines)

    def line_bytes(self, first: int, last: int) -> list[bytes]:
        return self.lines[first : min(last, self.count)]

    def line(self, n: int) -> str:
        if n >= len(self.lines):
            return ""
        raw = self.lines[n]
        return shown_text(raw, len(raw))

    def partial_bytes(self) -> int:
        return 0  # an entry is added whole

    def partial_text(self) -> str:
        return ""

    def close(self) -> None:
        self._finalizer()


@dataclass(frozen=True)
class Probe:
    """What the path holds now, compared with an index."""

    verdict: str  # "same" | "grown" | "replaced" | "missing"
    size: int = 0


class LineIndex:
    """Start offsets of the complete lines of one inode.

    Thread model: one worker thread extends it (`extend_to`), the UI thread reads lines below the
    `count` it was told about. `starts` only ever grows, so entries the UI reads never change.
    """

    def __init__(self, path: Path, fd: int, dev: int, ino: int, head: bytes) -> None:
        self.path = path
        self.fd = fd
        self.dev = dev
        self.ino = ino
        self.head = head
        self.starts = array("Q", [0])
        self.size = 0  # bytes of the file seen by the last scan (complete lines + partial tail)
        self._cache: OrderedDict[int, str] = OrderedDict()
        self._cache_max = 4096
        self._lock = threading.Lock()
        # Closed when the last reference goes: a worker thread may still be scanning an index
        # the UI has already replaced, so the UI never closes one explicitly.
        self._finalizer = weakref.finalize(self, os.close, fd)

    # ----- building -------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path) -> LineIndex:
        """Open `path` and return an empty index on its inode. Raises OSError."""
        # Never block, never follow: a FIFO put in a room's place blocked this open (and the
        # dashboard's quit, which waits for its threads) until a writer came, and a symlink
        # showed another file's lines beside the error row of the room every door refuses.
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _not_regular(path, os.lstat(path).st_mode) from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise _not_regular(path, st.st_mode)
            head = os.pread(fd, HEAD_BYTES, 0)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, st.st_dev, st.st_ino, head)

    @property
    def count(self) -> int:
        """Complete lines indexed so far."""
        return len(self.starts) - 1

    @property
    def scanned(self) -> int:
        """Offset just past the last complete line indexed."""
        return self.starts[-1]

    def extend_to(self, size: int, cancelled: Cancelled = _never) -> int:
        """Index complete lines up to `size` bytes. Returns the new line count."""
        with self._lock:
            # Continue from the last line start; a partial tail is rescanned next time.
            scan_newlines(self.fd, self.scanned, size, self.starts, cancelled)
            self.size = max(self.size, size)
            return self.count

    def extend_step(self, limit_bytes: int, cancelled: Cancelled = _never) -> bool:
        """Index up to `limit_bytes` more; True when the whole current file is indexed."""
        size = os.fstat(self.fd).st_size
        target = min(size, self.scanned + limit_bytes)
        self.extend_to(target, cancelled)
        self.size = size
        return target >= size

    # ----- paging (LineSource) -------------------------------------------------------------
    def first_page(self, cancelled: Cancelled = _never) -> bool:
        return self.extend_step(FIRST_PAINT_BYTES, cancelled)

    def next_page(self, cancelled: Cancelled = _never) -> bool:
        return self.extend_step(STEP_BYTES, cancelled)

    def load_all(self) -> None:
        self.extend_to(self.size_now())

    def catch_up(self) -> bool:
        probe = self.probe()
        if probe.verdict in ("missing", "replaced"):
            return False
        self.extend_to(probe.size)
        return True

    # ----- change detection -----------------------------------------------------------------
    def probe(self) -> Probe:
        """Has the file at `path` only grown since this index was built?"""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return Probe("missing")
        if (st.st_dev, st.st_ino) != (self.dev, self.ino):
            return Probe("replaced", st.st_size)
        if st.st_size < self.scanned:
            return Probe("replaced", st.st_size)  # truncated in place
        head = os.pread(self.fd, len(self.head), 0)
        if head != self.head:
            return Probe("replaced", st.st_size)  # rewritten in place
        return Probe("grown" if st.st_size != self.size else "same", st.st_size)

    def same_prefix(self, lines: Sequence[bytes], start: int | str, upto: int) -> int:
        """How many of a read's first `lines` are this index's first `upto` lines: the same
        file (never replaced since it was indexed: an ack renames a new file in) and the same
        bytes. Lines renumbered by an ack in between count as not shown (0)."""
        del start  # a file read always starts at the file's first byte
        if upto <= 0 or self.probe().verdict not in ("same", "grown"):
            return 0
        return equal_prefix(lines, self.line_bytes(0, upto))

    # ----- reading ----------------------------------------------------------------------------
    def partial_bytes(self) -> int:
        return max(0, self.size - self.scanned)

    def line_bytes(self, first: int, last: int) -> list[bytes]:
        """Raw bytes of lines [first, last) (clamped), without newlines, in one pread."""
        last = min(last, self.count)
        if first >= last:
            return []
        start = self.starts[first]
        data = os.pread(self.fd, self.starts[last] - start, start)
        return data.split(b"\n")[: last - first]

    def line(self, n: int, *, block: int = 128) -> str:
        """Display text of line n, reading a block of neighbours on a cache miss."""
        text = self._cache.get(n)
        if text is not None:
            self._cache.move_to_end(n)
            return text
        first = max(0, n - block // 4)
        for i, raw in enumerate(self._shown_bytes(first, first + block), first):
            self._cache[i] = shown_text(raw, self.starts[i + 1] - self.starts[i] - 1)
        while len(self._cache) > self._cache_max:
            self._cache.popitem(last=False)
        return self._cache.get(n, "")

    def _shown_bytes(self, first: int, last: int) -> list[bytes]:
        """Like `line_bytes`, but a line longer than SHOWN_MAX is read only that far (a block
        holding a 50 MB line would otherwise read and split all of it)."""
        last = min(last, self.count)
        out: list[bytes] = []
        i = first
        while i < last:
            j = i  # lines [i, j) are short: one pread for all of them
            while j < last and self.starts[j + 1] - self.starts[j] <= SHOWN_MAX + 1:
                j += 1
            if j > i:
                out += self.line_bytes(i, j)
                i = j
            else:
                out.append(os.pread(self.fd, SHOWN_MAX, self.starts[i]))
                i += 1
        return out

    def partial_text(self) -> str:
        if self.partial_bytes() <= 0:
            return ""
        start = self.scanned
        raw = os.pread(self.fd, min(self.size - start, 4096), start)
        return display_text(raw.split(b"\n")[0])

    def size_now(self) -> int:
        return os.fstat(self.fd).st_size

    def close(self) -> None:
        self._finalizer()
