"""A file room's queries and waits: a line's journey (`room trace`), the lines holding a
text, and the waits for an unread line or for a pushed line to be acked.
None of them writes the room.

Apart from core/rooms/file/room.py (whose methods of the same names call these) so that a
turn's read, ack or status, which run none of them, load none of their bytecode
(tests/test_layering.py counts it).
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

from ackdeck.core.base.locks import locked
from ackdeck.core.base.names import check_name
from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.file import ledger as L
from ackdeck.core.rooms.file.sidecar import intent_entry

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from ackdeck.core.rooms.file.room import Room
    from ackdeck.core.rooms.journey import Journey


def trace(room: Room, offset: int | str) -> Journey:
    """The journey of the line that starts at logical `offset` (what push returned)."""
    try:
        at = int(offset)
    except ValueError:
        raise InvalidInput(f"offset {offset!r} is not a byte offset of a file room") from None
    from ackdeck.core.rooms import journey

    with consistent(room) as (fd, ledger):
        return journey.trace_file(
            fd,
            ledger.base,
            ledger.epoch,
            room.sidecar,
            room._side.journey_dir,
            at,
            unaudited(room, ledger),
        )


def unaudited(room: Room, settled: L.Ledger) -> list[dict[str, object]]:
    """The audit entry of an interrupted ack whose rename happened, when no exclusive
    operation has recovered it yet (it may not be in the audit log): what a query that
    writes nothing reads in its place. `settled`: the ledger as this query settled it."""
    if not room._side.ensure(create=False):
        return []
    raw = room._ledger()
    p = raw.pending
    if p is None or (settled.epoch, settled.base) != (raw.epoch, p.base) or p.base == raw.base:
        return []  # no intent, or its rename never happened
    return [intent_entry(raw, room._clock()).to_json()]


def find(room: Room, text: str | bytes) -> tuple[list[int | str], int]:
    """The offsets of the lines now in the room that contain `text` (the newest
    journey.MATCH_LIMIT), and how many do."""
    from ackdeck.core.rooms import journey

    needle = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    with consistent(room) as (fd, ledger):
        if fd is None:
            return [], 0
        found, total = journey.find_file(fd, ledger.base, needle)
        return list(found), total


def wait(
    room: Room, session: str, timeout: float | None = None, stop: Callable[[], bool] | None = None
) -> bool:
    """Block until `session` has unread complete lines (True) or the timeout passes (False).

    Watches the directory, not the file: an ack renames a new inode over the file and a
    watch on the old one would go silent.
    """
    check_name(session)
    room._side.check_dir()
    deadline = None if timeout is None else time.monotonic() + timeout
    if _unread(room, session) > 0:
        return True
    if deadline is not None and deadline <= time.monotonic():
        return False
    # Any event for the room name is a reason to re-check. The watcher also wakes every
    # step without events, which bounds the race between the first check above and
    # the watcher starting, and lets late bytes in a replaced inode be swept.
    for _ in watch(room.path.parent, {room.path.name}, timeout):
        if _unread(room, session) > 0:
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        if stop is not None and stop():
            return False
    return False


def _unread(room: Room, session: str) -> int:
    room._maybe_sweep()
    st = room.status()
    if session in st.sessions:
        return st.sessions[session].unread
    return st.pending


def wait_acked(
    room: Room,
    offset: int | str,
    timeout: float | None = None,
    stop: Callable[[], bool] | None = None,
) -> Journey | None:
    """Block until the line at `offset` left the room: its journey then (acked, moved to
    the dead-letter room, or neither: removed behind ackdeck's back, which no audit entry
    records); None when `timeout` passed first (or `stop` said so).

    Watches the sidecar directory: every ack appends its audit entry and stores the ledger
    there. The watcher also wakes every step without events, which bounds the race between
    a check and the watcher starting (as wait does)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    found = _left(room, offset)
    if found is not None or (deadline is not None and deadline <= time.monotonic()):
        return found
    for _ in watch(room.sidecar, {"ledger", "audit.jsonl"}, timeout):
        found = _left(room, offset)
        if found is not None:
            return found
        if deadline is not None and time.monotonic() >= deadline:
            return None
        if stop is not None and stop():
            return None
    return None


def _left(room: Room, offset: int | str) -> Journey | None:
    """The line's journey if it left the room. Acked or dead only as the audit says (an
    ack audits before it commits its base, core/rooms/file/ack.py): a line below the base with
    no entry was removed by something else, and is reported as neither."""
    try:
        j = trace(room, offset)
    except InvalidInput:
        with consistent(room) as (_fd, ledger):
            if int(offset) >= ledger.base:
                raise
        from ackdeck.core.rooms.journey import Journey

        return Journey(offset, False, None, None, False, [])
    return None if j.present else j


@contextmanager
def consistent(room: Room) -> Iterator[tuple[int | None, L.Ledger]]:
    """The room file open with the ledger that describes it (shared lock held when there
    is a sidecar, as for status); writes nothing."""
    has_sidecar = room._side.ensure(create=False)
    with locked(room.lock_file, shared=True) if has_sidecar else nullcontext():
        fd = room._open()
        try:
            if fd is None:
                yield None, room._ledger() if has_sidecar else L.Ledger()
            else:
                yield fd, room._settled_ledger(fd, can_write=False)[0]
        finally:
            if fd is not None:
                os.close(fd)


def watch(directory: Path, names: set[str], timeout: float | None) -> Iterator[object]:
    """Events for `names` in `directory` (not recursive), and a tick at least every 250 ms
    (shorter for a short timeout) without them, for a caller that re-checks on each."""
    import watchfiles  # local: only the waits need the watcher

    step_ms = 250 if timeout is None else max(10, min(250, int(timeout * 1000)))
    return watchfiles.watch(
        directory,
        watch_filter=lambda _c, p: os.path.basename(p) in names,
        debounce=20,
        step=10,
        rust_timeout=step_ms,
        yield_on_timeout=True,
        raise_interrupt=False,
        recursive=False,
    )
