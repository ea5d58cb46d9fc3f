"""A file room's side of a hand-over (core/service/handover.py): the moved lines pushed in
one write, the look for a push whose reply was lost, the audit entry that says the lines
moved, and the hand-over's own receipt forgotten.

Apart from core/rooms/file/room.py (whose methods of the same names call these) so that a
turn's read, ack or status, which run none of them, load none of their bytecode
(tests/test_layering.py counts it).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ackdeck.core.base import atomic
from ackdeck.core.base.names import check_name
from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.file.queries import consistent

if TYPE_CHECKING:
    from collections.abc import Collection

    from ackdeck.core.rooms.file.room import Room


def push_lines(room: Room, lines: list[bytes]) -> int:
    """Append several lines in one write (a hand-over, core/service/handover.py: a crash
    leaves all of them in the room or none); return the logical offset of the first.
    They are another room's lines, moved as they are: a blank line or a NUL a producer
    wrote there is kept (push() refuses them from a person), a newline inside one never."""
    for line in lines:
        if b"\n" in line:
            raise InvalidInput("a handed-over line cannot hold a newline")
    if not lines:
        raise InvalidInput("no lines to push")
    return room._append(b"".join(line + b"\n" for line in lines))


def find_block(room: Room, since: int, epoch: int, block: bytes) -> tuple[int | None, bool]:
    """Where the complete lines `block` start in the room, at a line start at or after
    logical offset `since` of `epoch` (a hand-over whose push reply was lost looks for
    its push), or None; and whether that answer is certain: False when the room no longer
    reaches back to `since` (lines from there on were acked, or the epoch changed), so
    an absence proves nothing. Reads only."""
    with consistent(room) as (fd, ledger):
        reaches = ledger.epoch == epoch and ledger.base <= since
        if fd is None:
            return None, reaches
        size = os.fstat(fd).st_size
        start = since - ledger.base if reaches else 0
        data = os.pread(fd, size - start, start) if size > start else b""
        at = 0
        while (at := data.find(block, at)) >= 0:
            line_start = (
                data[at - 1 : at] == b"\n"
                if at
                else (start == 0 or os.pread(fd, 1, start - 1) == b"\n")
            )
            if line_start:
                return ledger.base + start + at, True
            at += 1
        return None, reaches


def note_handover(room: Room, start: int, end: int, lines: int, sha256: str, text: str) -> None:
    """Audit that a hand-over moved the lines in [start, end) out of this room or into
    it (`text` says which: "handed over from S to T"), for `room trace`. Once: a re-run
    after a crash finds the entry there and adds none."""
    from ackdeck.core.rooms import journey
    from ackdeck.core.rooms.file.sidecar import AuditEntry

    room._side.ensure(create=True)
    with room._side.lock(shared=False):
        ledger = room._ledger()
        entry = AuditEntry(
            at=room._clock(),
            session="handover",
            mode="handover",
            epoch=ledger.epoch,
            start=start,
            end=end,
            acked=lines,
            preserved=0,
            sha256=sha256,
            handover=text,
        )
        if not any(
            doc.get("mode") == "handover" and (doc.get("start"), doc.get("end")) == (start, end)
            for doc in journey.audit_entries(room._side.audit_file)
        ):
            room._side.audit(entry)


def forget(room: Room, session: str, readers: Collection[str] = ()) -> bool:
    """Stop counting `session` as a reader of this room: its receipt (the cursor of its
    unread count, and what authorises its next ack) goes. For a reader that will not come
    back, such as a finished hand-over's own; a later read by that name starts afresh.
    Only when nothing of it could still be acked: its last read is acked or took no line,
    or was handed to one of `readers` (the caller's own reads, which it will not ack).
    Nothing is removed from the room either way. False when the receipt is kept."""
    check_name(session)
    if not room._side.ensure(create=False):
        return False
    with room._side.lock(shared=False):
        header = room._receipts.header(session)
        if header is None:
            return False
        if not (header.acked or header.lines == 0 or header.reader in readers):
            return False
        atomic.unlink_quietly(room._receipts.file(session))
        return True
