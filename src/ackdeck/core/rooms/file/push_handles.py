"""Push: the descriptors a Room keeps open across pushes, so a push costs a few syscalls, not
a dozen, and the one append each push makes.

A push needs the sidecar lock (shared) and the ledger's `base`. Opening, checking and closing
both per line cost more than the append itself, so they stay open in the Room object:
- the flock goes on the cached lock descriptor (the same inode every ackdeck process locks);
- `base` is served from the cached ledger descriptor: one stat of the ledger path (is it still
  the inode we hold? a moved-aside ledger or a removed sidecar shows up as another inode or as
  missing, and the inode we hold open cannot be reused) and one pread of both slot headers (a
  store always writes a higher sequence number, so unchanged numbers mean an unchanged base).
Anything unexpected drops the descriptors and the caller takes the slow path, which validates
the sidecar and parses the ledger from scratch.

The descriptors belong to one process: a forked child must not share their open file
description (unlocking it would release the parent's flock), so a fork invalidates them and
the child opens its own.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat

from ackdeck.core.rooms.file import ledger_slots, seen_marks
from ackdeck.core.rooms.file.sidecar_checks import refuse_unless_regular, same_inode
from ackdeck.core.rooms.room_errors import LEDGER_HINT, UNCHANGED, write_error

# On the push path (tests/test_push_path.py): no pathlib, no ledger records (ledger.py is
# imported only when the slots do not give `base` at once), collections.abc for type
# checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ackdeck.core.rooms.file import ledger as L

# Covers slot 0 and the header (with the sequence number) of slot 1.
SLOTS_SPAN = ledger_slots.LEDGER_SLOT + 128

_generation = [0]


def _forked() -> None:
    _generation[0] += 1


os.register_at_fork(after_in_child=_forked)


class PushHandles:
    """Open lock and ledger descriptors of one room, with the base seen at a slot sequence."""

    __slots__ = (
        "lock_fd",
        "ledger_fd",
        "ledger_ino",
        "slots",
        "base",
        "generation",
        "_marks",
        "marks_size",
        "marks_best",
        "_closer",
        "_open",
        "__weakref__",
    )

    def __init__(
        self, lock_fd: int, ledger_fd: int, ledger_ino: int, *, finalize: bool = True
    ) -> None:
        self.lock_fd = lock_fd
        self.ledger_fd = ledger_fd
        self.ledger_ino = ledger_ino
        # The ledger bytes `base` was read from: slot 0 and the header of slot 1, read with the
        # shared lock held (stores happen under the exclusive one). Every store rewrites one
        # slot with a higher sequence number in its header, so the same bytes mean the same
        # ledger state.
        self.slots = b""
        self.base = 0
        self.generation = _generation[0]
        # The first-seen marks, opened at the first push that finds them (-1 until then), and
        # their size and newest offset as last read (or as our own last mark left them).
        self._marks = [-1]
        self.marks_size = -1
        self.marks_best = 0
        # Closes all when this object is collected (or at exit) if close() was not called.
        # In a forked child that closes only the child's copies: a flock lasts until every
        # descriptor of its open file description is closed, so the parent's lock stays.
        # Without `finalize` the owner closes them itself, always (a one-shot CLI push, in a
        # `finally`): weakref and its imports are a tenth of a bare interpreter.
        self._open = True
        self._closer = None
        if finalize:
            import weakref  # here: only pushes make handles, every room command loads this

            self._closer = weakref.finalize(self, _close_all, ledger_fd, lock_fd, self._marks)

    def usable(self) -> bool:
        return self.generation == _generation[0]

    def current_base(self, ledger_path: str, fresh: Callable[[], L.Ledger]) -> int | None:
        """The ledger's `base`, with the shared lock held on `lock_fd`; None if the ledger path
        is no longer the inode held (the caller drops these handles and opens new ones).
        `fresh()` is the state to start from when the ledger has none yet."""
        # Is the ledger path still the inode we hold? A moved-aside ledger or a removed sidecar
        # shows up as another inode (ours is held open, so its number cannot be reused) or as
        # missing.
        try:
            if os.stat(ledger_path).st_ino != self.ledger_ino:
                return None
        except FileNotFoundError:
            return None
        # Before the write: a corrupt ledger must fail the push with nothing appended, or a
        # retrying producer would duplicate the line.
        slots = os.pread(self.ledger_fd, SLOTS_SPAN, 0)
        if slots != self.slots:
            base = ledger_slots.read_base(ledger_path)
            if base is None:
                # No ledger state yet, or one the slots alone cannot read: the full model
                # decides (a fresh base, or the one-line error naming what is wrong).
                from ackdeck.core.rooms.file import ledger as L

                base = L.load_base(ledger_path, hint=LEDGER_HINT, fresh=lambda: fresh().base)
            self.base = base
            self.slots = slots
        return self.base

    def numbered(self, marks_path: str) -> int:
        """The furthest logical offset ackdeck numbered in the room (the newest first-seen
        mark, core/rooms/file/seen_marks.py; 0 without marks), from a descriptor kept open: an fstat
        and, only when someone else added marks since (`noted`), one pread. A compaction
        replaces the file by rename: the inode held then has no name left, and the path is
        opened again."""
        fd = self._marks[0]
        if fd >= 0:
            st = os.fstat(fd)
            if st.st_nlink == 0:
                os.close(fd)
                fd = self._marks[0] = -1
        if fd < 0:
            try:
                fd = os.open(marks_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except (FileNotFoundError, NotADirectoryError):
                return 0
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                # A FIFO or a directory in the marks' place (seen_marks.Marks._open): no marks,
                # never a push that blocks or fails on them.
                os.close(fd)
                return 0
            self._marks[0] = fd
        if st.st_size != self.marks_size:
            self.marks_size = st.st_size
            self.marks_best = seen_marks.newest_end_of(fd, st.st_size)
        return self.marks_best

    def noted(self, end: int) -> None:
        """Our own push appended one mark at `end`: the next `numbered` need not read it."""
        if self.marks_size >= 0:
            self.marks_size += seen_marks.WIDTH
            self.marks_best = max(self.marks_best, end)

    def close(self) -> None:
        """Close the descriptors, once; releases any flock still held through the lock one."""
        if self._closer is not None:
            self._closer()  # runs once
        elif self._open:
            _close_all(self.ledger_fd, self.lock_fd, self._marks)
        self._open = False


def _close_all(ledger_fd: int, lock_fd: int, marks: list[int]) -> None:
    os.close(ledger_fd)
    os.close(lock_fd)
    if marks[0] >= 0:
        os.close(marks[0])


def append_line(path: str, data: bytes, lock: int, numbered: int = 0) -> int | None:
    """One O_APPEND write of `data` (concurrent pushers never interleave); its offset in the
    file. `path` is a plain string: building a Path per push costs a quarter of the push.

    None, with nothing written, when the file is shorter than `numbered` (the furthest file
    offset ackdeck already numbered): it was truncated or replaced behind ackdeck's back, and
    a line numbered in the old epoch would repeat an old line's offset and inherit its age.

    The shared lock is held on `lock`. A write that stops short (a full disk) is undone
    before the error is raised, so a retry is never glued onto a fragment."""
    try:
        # O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of hanging; with a reader
        # it opens and fstat refuses it. O_NOFOLLOW: never write through a symlink.
        fd = os.open(
            path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            refuse_unless_regular(path, stat.S_IFLNK)
        if exc.errno == errno.ENXIO:
            refuse_unless_regular(path, stat.S_IFIFO)
        raise write_error(path, exc) from None
    try:
        st = os.fstat(fd)
        refuse_unless_regular(path, st.st_mode)
        if st.st_size < numbered:
            return None
        try:
            n = os.write(fd, data)
        except OSError as exc:
            raise write_error(path, exc) from None  # nothing was written
        end = os.lseek(fd, 0, os.SEEK_CUR)
        if n != len(data):
            # Not retried: a second O_APPEND write could land after another pusher's line and
            # split ours in two.
            left = remove_fragment(path, fd, lock, data[:n], end)
            raise write_error(path, OSError(errno.ENOSPC, "short write"), after=left) from None
        return end - len(data)
    finally:
        os.close(fd)


def remove_fragment(
    path: str | os.PathLike[str], fd: int, lock: int, fragment: bytes, end: int
) -> str:
    """Undo the first `len(fragment)` bytes of a line whose write stopped short at `end`.

    Says exactly what the room holds afterwards (the tail of the one-line error). Takes the
    exclusive lock (flock converts ours) so no locked pusher or ack moves the file meanwhile.
    """
    from ackdeck.core.base.text import counted  # the error's words (and `re`): not a push's

    n = len(fragment)
    fcntl.flock(lock, fcntl.LOCK_EX)
    st = os.fstat(fd)
    if same_inode(path, st) and st.st_size == end:
        os.ftruncate(fd, end - n)  # nothing after the fragment: the room is as it was
        return UNCHANGED
    if same_inode(path, st):
        # Another writer appended after the fragment; cutting it out would need the space we
        # lack. End it with a newline in place (one overwritten byte, no new space), so the
        # next line is not glued onto it. pwrite needs a descriptor without O_APPEND.
        wfd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if (os.fstat(wfd).st_dev, os.fstat(wfd).st_ino) == (st.st_dev, st.st_ino):
                os.pwrite(wfd, b"\n", end - 1)
                return (
                    f"another writer appended after the partial line, so its first "
                    f"{counted(n - 1, 'byte')} were left as a line of their own; every other "
                    "line is intact"
                )
        finally:
            os.close(wfd)
    return (
        f"the room was replaced meanwhile; a partial line of {counted(n, 'byte')} may remain "
        "at its end, where the next line would be glued onto it"
    )
