"""The data passes of an ack: verifying the consumed head and copying the kept rest."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator

from . import ledger as L
from ._bytes import pread_chunks
from ._faults import pause

# From this many bytes on, a read hashes its lines in a worker thread while it splits them.
THREAD_MIN = 1 << 20


class Digest:
    """SHA-256 of `data`, computed in a worker thread when `data` is large."""

    def __init__(self, data: bytes) -> None:
        self._h = hashlib.sha256()
        self._thread: threading.Thread | None = None
        if len(data) >= THREAD_MIN:
            self._thread = threading.Thread(target=self._h.update, args=(data,))
            self._thread.start()
        else:
            self._h.update(data)

    def hexdigest(self) -> str:
        if self._thread is not None:
            self._thread.join()
        return self._h.hexdigest()


def head_matches(room_fd: int, receipt_fd: int, body_at: int, length: int) -> bool:
    """Are the room's first `length` bytes exactly the first `length` bytes of the receipt body
    (which starts at `body_at` in the receipt file)? Compared in chunks with memcmp (bytes ==),
    several times cheaper than hashing the head, and byte-exact rather than by digest."""
    offset = 0
    while offset < length:
        n = min(_CMP_CHUNK, length - offset)
        head = os.pread(room_fd, n, offset)
        if len(head) != n or os.pread(receipt_fd, n, body_at + offset) != head:
            return False
        offset += n
    return True


# Small enough that both compared chunks stay in the CPU cache between pread and memcmp.
_CMP_CHUNK = 256 << 10


class CountingCopy:
    """Feeds the kept bytes to the temp file, counting newlines and keeping the head on the way,
    so an ack reads each byte of the room once. (Counting holds the GIL; a counting thread
    measured no faster than counting here, unlike the head hash, which releases it.)"""

    def __init__(self, fd: int, start: int, end: int) -> None:
        self._fd, self._start, self._end = fd, start, end
        self.newlines = 0
        self.head = b""

    def chunks(self) -> Iterator[bytes]:
        first = True
        for chunk in pread_chunks(self._fd, self._start, self._end):
            self.newlines += chunk.count(b"\n")
            if len(self.head) < L.HEAD_BYTES:
                self.head += chunk[: L.HEAD_BYTES - len(self.head)]
            yield chunk
            if first:
                first = False
                pause("mid-temp")  # the first chunk is written, the temp is incomplete


def hash_range(fd: int, start: int, end: int) -> str:
    h = hashlib.sha256()
    for chunk in pread_chunks(fd, start, end):
        h.update(chunk)
    return h.hexdigest()
