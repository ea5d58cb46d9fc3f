"""The data passes of an ack: verifying the consumed head and copying the kept rest."""

from __future__ import annotations

from ackdeck.core.base.byteio import pread_chunks
from ackdeck.core.base.digest import new_sha256
from ackdeck.core.base.faults import pause
from ackdeck.core.rooms.file import ledger as L

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
# threading is imported where a worker is started (large reads and acks only): every room
# command loads this module, and `import threading` costs ~1 ms of its start-up.
if TYPE_CHECKING:
    import threading
    from collections.abc import Iterator  # annotations only (a turn loads no collections)

# From this many kept bytes on, an ack counts their newlines in a worker thread.
COUNT_THREAD_MIN = 4 << 20
_COPY_CHUNK = 1 << 20
# From this many bytes on, a read hashes its lines in a worker thread while it splits them.
THREAD_MIN = 1 << 20


class Digest:
    """SHA-256 of `data`, computed in a worker thread when `data` is large."""

    def __init__(self, data: bytes) -> None:
        self._h = new_sha256(len(data))
        self._thread: threading.Thread | None = None
        if len(data) >= THREAD_MIN:
            import threading

            self._thread = threading.Thread(target=self._h.update, args=(data,))
            self._thread.start()
        else:
            self._h.update(data)

    def hexdigest(self) -> str:
        if self._thread is not None:
            self._thread.join()
        return self._h.hexdigest()


def head_hashes_to(room_fd: int, length: int, want: str) -> bool:
    """Are the room's first `length` bytes (all there) the bytes whose SHA-256 is `want`? The
    receipt keeps the digest of what was read, not its text (core/rooms/file/receipts.py)."""
    h = new_sha256(length)
    got = 0
    for chunk in pread_chunks(room_fd, 0, length):
        h.update(chunk)
        got += len(chunk)
    return got == length and h.hexdigest() == want


class HeadCheck:
    """`head_hashes_to`, from THREAD_MIN bytes on in a worker thread started right away:
    pread and OpenSSL's SHA-256 release the GIL, so the hash overlaps the temp copy instead of
    adding to it."""

    def __init__(self, room_fd: int, length: int, want: str) -> None:
        self._args = (room_fd, length, want)
        self._result = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if length >= THREAD_MIN:
            import threading

            self._thread = threading.Thread(target=self._run, name="ackdeck-head-check")
            self._thread.start()

    def _run(self) -> None:
        try:
            self._result = head_hashes_to(*self._args)
        except BaseException as exc:  # re-raised by ok() on the acking thread
            self._error = exc

    def ok(self) -> bool:
        if self._thread is None:
            self._run()
        else:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()


class CountingCopy:
    """Feeds the kept bytes to the temp file, counting newlines and keeping the head on the way,
    so an ack reads each byte of the room once.

    From COUNT_THREAD_MIN bytes on, the newlines are counted in a worker thread: counting holds
    the GIL but the acking thread's write(2) releases it, so each chunk is counted while it is
    being written instead of before. Chunks are small, so the worker never holds the GIL long.
    """

    def __init__(self, fd: int, start: int, end: int) -> None:
        self._fd, self._start, self._end = fd, start, end
        self.newlines = 0
        self.head = b""

    def chunks(self) -> Iterator[bytes]:
        if self._end - self._start < COUNT_THREAD_MIN:
            for i, chunk in enumerate(pread_chunks(self._fd, self._start, self._end)):
                self.newlines += chunk.count(b"\n")
                yield from self._pass_on(chunk, i)
            return
        import queue  # here, not at the top: only large acks need it, every command loads us
        import threading

        todo: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        counted = [0]

        def count() -> None:
            while (chunk := todo.get()) is not None:
                counted[0] += chunk.count(b"\n")

        worker = threading.Thread(target=count, name="ackdeck-count")
        worker.start()
        try:
            chunks = pread_chunks(self._fd, self._start, self._end, size=_COPY_CHUNK)
            for i, chunk in enumerate(chunks):
                todo.put(chunk)
                yield from self._pass_on(chunk, i)
        finally:
            todo.put(None)
            worker.join()  # also on errors: never leave the worker behind
        self.newlines = counted[0]

    def _pass_on(self, chunk: bytes, index: int) -> Iterator[bytes]:
        if len(self.head) < L.HEAD_BYTES:
            self.head += chunk[: L.HEAD_BYTES - len(self.head)]
        yield chunk
        if index == 0:
            pause("mid-temp")  # the first chunk is written, the temp is incomplete


def hash_range(fd: int, start: int, end: int) -> str:
    """The hex SHA-256 of bytes [start, end) of the file open at `fd`, read in chunks."""
    h = new_sha256(end - start)
    for chunk in pread_chunks(fd, start, end):
        h.update(chunk)
    return str(h.hexdigest())
