"""Push's append: one or more complete lines in one write, under the room's shared lock, at
the logical offset the ledger's `base` gives, with the line's first-seen mark after it.

This is the machinery of `Room.push` (and of the dead-letter move, which appends another
room's lines byte for byte), in a module of its own so that the CLI's per-turn `room push`
runs exactly it without importing the Room and everything the other operations need
(core/service/push.py). It works on plain str paths, named by core/base/locations.py, and
imports no pathlib, `re`, json, enum, contextlib, functools, dataclasses or typing: on this VM
`import pathlib` alone is ~2x a bare interpreter, while the syscalls of a push are ~5% of one
(tests/test_push_path.py holds it to that).

What only a room's rare moments need stays in the Room and is reached through `slow`, a
function returning the Room (built then, for the CLI's push): the ledger written for a room's
first push (`_fresh_ledger`, `_store`: json and the records) and a new epoch recorded after the
room was truncated behind ackdeck's back (`_settle_epoch`: the whole ledger reconciliation).
"""

from __future__ import annotations

import _thread  # threading's lock without importing threading (~1 ms per command)
import fcntl
import os

from ackdeck.core.base import locations
from ackdeck.core.base.faults import pause
from ackdeck.core.base.statefile import open_state
from ackdeck.core.errors import InvalidInput, RoomUnavailable
from ackdeck.core.rooms.file import seen_marks
from ackdeck.core.rooms.file.push_handles import PushHandles, append_line
from ackdeck.core.rooms.file.sidecar_checks import check_kind, check_room_dir, ensure_sidecar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ackdeck.core.rooms.file.room import Room


def line_bytes(line: str | bytes) -> bytes:
    """The bytes a push appends for `line`, its newline included; InvalidInput for a line
    that is no notification. A str is encoded as UTF-8 with surrogateescape, so bytes that
    came in through argv (`room push r $'\\xff'`) are written exactly."""
    try:
        data = line.encode("utf-8", "surrogateescape") if isinstance(line, str) else bytes(line)
    except UnicodeEncodeError:
        raise InvalidInput("a pushed line must be valid text or bytes") from None
    if not data:
        # An empty notification carries nothing and only costs the reader a turn.
        raise InvalidInput("a pushed line must not be empty")
    if b"\n" in data:
        raise InvalidInput("a pushed line must not contain a newline")
    if b"\0" in data:
        raise InvalidInput("a pushed line must not contain a NUL byte")
    return data + b"\n"


class Appender:
    """The append of one room at `room` (absolute, as sidecar_checks.room_target gives it).
    Keeps the lock and ledger descriptors open across appends (push_handles.py) until
    `close()`; safe to share between threads. `finalize`: close them when the handles are
    collected, should `close()` never be called (False: the owner always calls it)."""

    def __init__(
        self,
        room: str,
        *,
        clock: Callable[[], float],
        slow: Callable[[], Room],
        finalize: bool = True,
    ) -> None:
        self.room = room
        self.sidecar = locations.sidecar_str(room)
        self.lock_path = locations.room_lock_str(self.sidecar)
        self.ledger_path = locations.ledger_str(self.sidecar)
        self.marks_path = locations.seen_marks_str(self.sidecar)
        self._clock = clock
        self._slow = slow
        self._finalize = finalize
        self.handles: PushHandles | None = None
        # Threads sharing this object must not unlock each other's flock on the shared
        # descriptor.
        self._mutex = _thread.allocate_lock()

    def append(self, data: bytes) -> int:
        """Append `data` (complete lines) in one write under the shared lock; return the
        logical offset where it starts."""
        with self._mutex:
            for _ in range(8):
                h = self.handles
                if h is None or not h.usable():
                    h = self.handles = self._open_handles()
                lock = h.lock_fd
                fcntl.flock(lock, fcntl.LOCK_SH)
                try:
                    base = h.current_base(self.ledger_path, lambda: self._slow()._fresh_ledger())
                    if base is not None:
                        # Before the append's stat (see Room._numbered).
                        numbered = h.numbered(self.marks_path) - base
                        got = append_line(self.room, data, lock, numbered)
                        if got is not None:
                            at = base + got
                            pause("push-after-append")
                            # The line's exact push time, for its age (a lost mark: see there).
                            end, now = at + len(data), self._clock()
                            if seen_marks.append(self.marks_path, end, now, seen_marks.PUSHED):
                                h.noted(end)
                            return at
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
                if base is not None:
                    # Truncated behind ackdeck's back: record the new epoch (exclusive lock),
                    # then number the line in it.
                    self._slow()._settle_epoch()
                    continue
                self._drop()  # the sidecar or ledger was replaced: validate it again
        raise RoomUnavailable(f"the sidecar {self.sidecar} keeps changing; push again")

    def _open_handles(self) -> PushHandles:
        """Validate the sidecar and open its lock and ledger (creating the ledger on first use,
        under the exclusive lock like every ledger store)."""
        check_room_dir(self.room)
        check_kind(self.room)  # before the sidecar exists: no `/dev/.null.ackdeck`
        ensure_sidecar(self.room, self.sidecar, create=True)
        try:
            lock = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except PermissionError as exc:
            raise RoomUnavailable(f"cannot lock {self.lock_path}: {exc.strerror}") from None
        try:
            found = open_state(self.ledger_path)  # refuses a FIFO or directory in its place
            if found is None:
                # A room's first push: the ledger's records and json, from the Room.
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    if not os.path.lexists(self.ledger_path):
                        room = self._slow()
                        room._store(room._fresh_ledger())
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
                found = open_state(self.ledger_path)
                if found is None:
                    raise RoomUnavailable(f"the ledger {self.ledger_path} vanished; push again")
            ledger = found
        except BaseException:
            os.close(lock)
            raise
        return PushHandles(lock, ledger, os.fstat(ledger).st_ino, finalize=self._finalize)

    def close(self) -> None:
        """Close the descriptors kept for appends (also done when the handles are collected)."""
        with self._mutex:
            self._drop()

    def _drop(self) -> None:
        h, self.handles = self.handles, None
        if h is not None:
            h.close()
