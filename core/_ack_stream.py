"""The data passes of an ack: verifying the consumed head and copying the kept rest."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator

from . import ledger as L
from ._bytes import pread_chunks
from ._faults import pause

# From this many bytes on, an ack verifies the head in a worker thread, overlapping the copy.
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


class HeadCheck:
    """Does the file's head still hold exactly the bytes a receipt recorded? Hashes the first
    `length` bytes in chunks; from THREAD_MIN bytes on in a worker thread (hashlib and pread
    release the GIL), so the check overlaps the temp copy instead of adding to it."""

    def __init__(self, fd: int, length: int, header: L.ReceiptHeader) -> None:
        self._fd, self._length, self._header = fd, length, header
        self._result: tuple[int, str] | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if length >= THREAD_MIN:
            self._thread = threading.Thread(target=self._run, name="ackdeck-head-check")
            self._thread.start()

    def _run(self) -> None:
        try:
            self._result = _hash_range(self._fd, 0, self._length)
        except BaseException as exc:  # re-raised in ok() on the acking thread
            self._error = exc

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def ok(self) -> bool:
        if self._thread is None:
            self._run()
        else:
            self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        n, digest = self._result
        return n == self._header.end - self._header.start and digest == self._header.sha256


def _hash_range(fd: int, start: int, end: int) -> tuple[int, str]:
    h = hashlib.sha256()
    n = 0
    for chunk in pread_chunks(fd, start, end):
        h.update(chunk)
        n += len(chunk)
    return n, h.hexdigest()


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
