"""Read-only views the doors show: a session's unread lines (the hooks), what one room holds
for a session (notices), the session's deliverable wakes (notices). Views never read a room
the way `room_list_new` does, ack, drain or reconcile: notices never consume.
"""

from __future__ import annotations

import os

from ackdeck.core.base.statefile import read_state
from ackdeck.core.base.struct import Struct
from ackdeck.core.base.text import display
from ackdeck.core.errors import AckdeckError, CorruptState, RecordError

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ackdeck.core.base.atomic import P  # the hooks' home is a str, others' a Path
    from ackdeck.core.service.roomref import RoomRef

LineKey = tuple[str, int, int]  # (run_id, start, end) of a matched output line
# The unread lines a hook shows at most.
PEEK_MAX_LINES = 20


class Unread(Struct):
    """A session's unread lines in one room, as the prompt and bootstrap hooks show them."""

    room: str  # a path, or a redis room's URL without its password
    count: int
    lines: list[bytes]  # the oldest unread lines, at most PEEK_MAX_LINES
    error: str | None = None
    queue: bool = False  # a work queue: its lines are claimed, not read (rooms/queue.py)


class RoomView(Struct):
    """What one room holds for one session right now."""

    path: str
    label: str  # how tools name the room (basename when unambiguous)
    exists: bool
    epoch: int
    end: int  # logical offset just past the last complete line (pushed_total - partial bytes)
    unread: int  # complete lines beyond the session's receipt
    preview: str | None = None  # the newest complete line, decoded for display
    # Which room this is beyond (epoch, end): the file's (dev, inode, birth time) when it could
    # be taken consistently (None: unknown), and the ack counters, which only grow over a
    # room's life. A room wiped together with its sidecar starts over at epoch 0, offset 0.
    file: tuple[int, int, int | None] | None = None
    acked_total: int = 0
    last_ack_at: float | None = None
    queue: bool = False  # a work queue: its lines are claimed, not read (rooms/queue.py)


class WakeView(Struct):
    """One wake record of the session, reduced to what is still deliverable."""

    name: str
    kind: str  # match | exited | monitor-lost
    created_at: float
    lines: tuple[LineKey, ...]  # pending lines the session was not shown
    notice_pending: bool  # an exit / monitor-lost notice waits
    notice_seq: int
    exit_code: int | None = None
    preview: str | None = None  # the newest deliverable line's text


def peek_unread(ref: RoomRef, session: str) -> Unread:
    """The session's unread lines, without recording a read or acking anything.

    Display only: counts come from core's status, the lines from the room's newest ones
    afterwards, so a concurrent ack or append can make them differ by a few lines.
    """
    room = ref.open()
    try:
        st = room.status()
        count = st.counts_of(session)[1]
        if count <= 0:
            return Unread(ref.display, 0, [], queue=st.queue)
        newest = room.tail(count)  # the newest lines, without a read (the room's own end)
    finally:
        room.close()
    return Unread(ref.display, len(newest), newest[:PEEK_MAX_LINES], queue=st.queue)


def view_room(ref: RoomRef, session: str, label: str) -> RoomView:
    room = ref.open()
    try:
        before = ref.identity()
        st = room.status()
        # Taken on both sides of the status: if an ack or a wipe replaced the file meanwhile,
        # which file the status describes is unknown, and the identity is not compared.
        after = ref.identity()
        file = after if after == before else None
        unread = st.counts_of(session)[1]
        end = st.pushed_total - st.partial_bytes
        preview = None
        if st.exists and unread:
            newest = room.tail(1)  # display only: no receipt
            preview = display(newest[0]) if newest else None
    finally:
        room.close()
    return RoomView(
        ref.display,
        label,
        st.exists,
        st.epoch,
        end,
        unread,
        preview,
        file=file,
        acked_total=st.acked_total,
        last_ack_at=st.last_ack_at,
        queue=st.queue,
    )


def view_wakes(home: P, session: str) -> list[WakeView]:
    """The session's wake records, without reconciling or merging anything (queries do not
    write). Lines the session was shown are left out, as the drain's gate would drop them."""
    from ackdeck.core.monitors import gate, shown, wakes
    from ackdeck.core.monitors.runs import run_dir

    d = wakes.session_dir(home, session)
    try:
        entries = sorted(os.scandir(d), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    out: list[WakeView] = []
    for e in entries:
        if e.name.startswith(".") or not e.name.endswith(".json"):
            continue
        try:
            raw = read_state(e.path)  # never blocks on a FIFO in a record's place
            if raw is None:
                continue
            rec = wakes.WakeRecord.loads(raw)
        except (OSError, CorruptState, RecordError, ValueError):
            continue  # skipped and kept, as every other reader does
        shown_by_run: dict[str, list[tuple[int, int]] | None] = {}
        keep = []
        for line in rec.lines:
            if line.run_id not in shown_by_run:
                try:
                    rdir = run_dir(home, rec.name, line.run_id)
                    shown_by_run[line.run_id] = shown.shown_intervals(rdir, session)
                except AckdeckError:
                    shown_by_run[line.run_id] = None
            if not gate.is_shown(shown_by_run[line.run_id], line.start, line.end):
                keep.append(line)
        if not keep and not rec.notice_pending:
            continue
        out.append(
            WakeView(
                name=rec.name,
                kind=rec.kind,
                created_at=rec.created_at,
                lines=tuple((x.run_id, x.start, x.end) for x in keep),
                notice_pending=rec.notice_pending,
                notice_seq=rec.notice_seq,
                exit_code=rec.notice_exit_code if rec.notice_pending else None,
                preview=keep[-1].text if keep else None,
            )
        )
    return out
