"""Room operations for every door: push, read, ack, status, wait.

Each takes an open room (`core.service.refs.open_room`, a file or a redis stream) and the
label the door shows for it (`core.service.deck.Deck.label`), calls `Room`'s public API once,
and returns a result that encodes itself. The derived numbers live here and in
`core.service.derive` only: a session's `unread` and `in_flight` (`session_counts`), and a
refused ack's `preserved` (the lines the room held when it refused, counted by the room under
its lock).
"""

from __future__ import annotations

from ackdeck.core.base.digest import use_openssl
from ackdeck.core.base.names import check_name
from ackdeck.core.base.text import counted, display_lines
from ackdeck.core.errors import ColdAck, NotDelivered, OutOfMemory
from ackdeck.core.inbox.ledger import HEAD_BYTES
from ackdeck.core.inbox.line_counts import LineCounts as LineCounts  # for doors that count again
from ackdeck.core.inbox.results import PAGE_BYTES as PAGE_BYTES  # for doors that name it
from ackdeck.core.inbox.results import AckResult, ReadResult, RoomStatus, SessionStatus
from ackdeck.core.inbox.results import check_page as check_page
from ackdeck.core.service.absent import absent_note
from ackdeck.core.service.derive import age, is_overdue, session_ages, session_counts
from ackdeck.core.service.results import DecodedLines, Result, fields_of

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ackdeck.core.inbox.room_backend import RoomBackend

    # Returns None (every line was delivered) or how many lines, from the first, were.
    Deliver = Callable[["Lines"], "int | None"]
    # Gets what will be recorded, last before it is; raising records nothing.
    Confirm = Callable[["Lines"], None]


# ----- results ------------------------------------------------------------------------------
class Pushed(Result):
    room: str
    path: str
    offset: int | str  # a byte offset (file room) or an entry ID (redis room)
    # With wait_ack (push_wait_ack): how the wait for this line's ack ended.
    waited: bool = False
    acked: bool = False  # only as the audit of an ack says
    acked_by: str | None = None
    acked_at: float | None = None
    dead_room: str | None = None  # it went to the dead-letter room instead
    # It left the room without an ack or a dead-letter move: removed or renumbered behind
    # ackdeck's back (a hand edit, a truncation); nobody is known to have acked it.
    removed: bool = False

    @property
    def timed_out(self) -> bool:
        return self.waited and not self.acked and self.dead_room is None and not self.removed


# What a wait for an ack says when the line left the room without one (Pushed.removed).
REMOVED_UNACKED = (
    "it left the room without an ack or a dead-letter move (removed or renumbered behind "
    "ackdeck's back: a hand edit or a truncation); nobody is known to have acked it"
)


class Lines(DecodedLines):
    """Lines a read returned (or an ack-all removed): raw bytes, shown decoded."""

    room: str
    path: str
    raw: list[bytes]
    start: int | str
    end: int | str
    epoch: int
    data: bytes  # the lines with their newlines, exactly as stored (text-mode output)
    note: str | None = None  # the room does not exist yet (core.service.absent)
    # Complete lines the room held beyond these when they were read: after this page, and any
    # the door could not carry (it carries at most what its client shows its model whole).
    waiting: int = 0
    # The id an ack may name to ack exactly this read from any process of the session (the
    # MCP door's reads; None: the read is not bound to a reader, as the CLI's).
    read_id: str | None = None

    SHAPE = {
        "room": str,
        "path": str,
        "lines": list[str],
        "count": int,
        "invalid_utf8": list[int],  # indexes of lines whose text replaced invalid bytes
        # start, end, epoch, waiting: as the backend's ReadResult declares them
        **fields_of(ReadResult, skip=("lines", "data")),
        "note": str | None,
        "read_id": str | None,
        "next": str | None,  # what to do next, in words (the structured result is the message)
    }

    @property
    def next(self) -> str | None:
        return next_after_read(self.count, self.waiting)

    def emptied(self) -> Lines:
        """The same read without its lines: what the rest of a reply about it costs."""
        return Lines(
            self.room,
            self.path,
            [],
            self.start,
            self.start,
            self.epoch,
            b"",
            self.note,
            self.waiting + len(self.raw),
            self.read_id,
        )


class Acked(Result):
    room: str
    path: str
    mode: str  # prefix | noop | stale | all | refused (a cold ack: see `refusal`)
    acked: int
    preserved: int
    message: str
    raw: list[bytes] | None = None  # ack-all only: the lines it removed
    refusal: ColdAck | None = None  # set when the room refused: the door reports it as an error
    note: str | None = None  # the room does not exist yet (core.service.absent)

    SHAPE = {
        "room": str,
        "path": str,
        # mode, acked, preserved, message, lines: as the backend's AckResult declares them
        **fields_of(AckResult, types={"mode": str, "lines": list[str] | None}),
        "note": str | None,
        "next": str | None,  # what to do next, in words
    }

    @property
    def lines(self) -> list[str] | None:
        return None if self.raw is None else display_lines(self.raw)[0]

    @property
    def next(self) -> str | None:
        return next_after_ack(self.mode, self.preserved)

    @property
    def must_reread(self) -> bool:
        """Nothing was removed and the session has to read again before an ack can work."""
        return self.mode in ("stale", "refused")


class SessionCounts(Result):
    counts: SessionStatus
    checked_at: float | None  # the room status's clock, ages are taken against it
    overdue_after: float | None = None  # the room's threshold (None: no alert)

    SHAPE = {
        **fields_of(SessionStatus),  # in_flight, unread, read_at, oldest_unread_at
        "in_flight_age": float | None,  # seconds since the unacked read (None: none)
        "unread_age": float | None,  # seconds since its oldest unread line was first seen
        "overdue": bool,  # its read waits for an ack, or a line for it, past the threshold
    }

    def source(self) -> SessionStatus:
        return self.counts

    @property
    def overdue(self) -> bool:
        t = self.overdue_after
        return is_overdue(self.in_flight_age, t) or is_overdue(self.unread_age, t)

    @property
    def in_flight_age(self) -> float | None:
        return age(self.counts.read_at, self.checked_at)

    @property
    def unread_age(self) -> float | None:
        return age(self.counts.oldest_unread_at, self.checked_at)


class RoomState(Result):
    """One room's counters, with `in_flight` / `unread` for the asking session."""

    room: str
    path: str
    default: bool  # the door's default room
    status: RoomStatus
    session: str | None
    overdue_override: float | None = None  # the door's --overdue, over the room's policy

    SHAPE = {
        "room": str,
        "path": str,
        "default": bool,
        # every counter of the backend's RoomStatus, as it declares them (overdue_after: the
        # room's policy, or the door's --overdue)
        **fields_of(RoomStatus, skip=("path", "sessions")),
        # the asking session's own
        **fields_of(SessionStatus, skip=("read_at", "oldest_unread_at")),
        "in_flight_age": float | None,
        "unread_age": float | None,
        # Seconds since the oldest line in the room, and the oldest line no session has read,
        # were first seen (None: no such line, or no mark dates it).
        "oldest_pending_age": float | None,
        "oldest_unread_age": float | None,
        "overdue": bool,  # the oldest line has waited past overdue_after (unread or unacked)
        "sessions": dict[str, SessionCounts],
        "note": str | None,
    }

    def source(self) -> RoomStatus:
        return self.status

    @property
    def note(self) -> str | None:
        """The words every door shows for a room that does not exist yet, else None."""
        return None if self.status.exists else absent_note(self.room, self.path)

    @property
    def in_flight(self) -> int:
        return session_counts(self.status, self.session)[0]

    @property
    def unread(self) -> int:
        return session_counts(self.status, self.session)[1]

    @property
    def in_flight_age(self) -> float | None:
        return session_ages(self.status, self.session)[0]

    @property
    def unread_age(self) -> float | None:
        return session_ages(self.status, self.session)[1]

    @property
    def oldest_pending_age(self) -> float | None:
        return age(self.status.oldest_pending_at, self.status.checked_at)

    @property
    def oldest_unread_age(self) -> float | None:
        return age(self.status.oldest_unread_at, self.status.checked_at)

    @property
    def overdue_after(self) -> float | None:
        if self.overdue_override is not None:
            return self.overdue_override
        return self.status.overdue_after

    @property
    def overdue(self) -> bool:
        return is_overdue(self.oldest_pending_age, self.overdue_after)

    @property
    def sessions(self) -> dict[str, SessionCounts]:
        at, t = self.status.checked_at, self.overdue_after
        return {name: SessionCounts(s, at, t) for name, s in self.status.sessions.items()}


class Status(Result):
    session: str | None
    rooms: list[RoomState]

    SHAPE = {"session": str | None, "rooms": list[RoomState]}


# ----- what to do next: the same words in every door's JSON (tool names and commands) --------
READ = "room_list_new (CLI: ackdeck room read)"
ACK = "room_ack (CLI: ackdeck room ack)"


def next_after_read(count: int, waiting: int) -> str | None:
    """The step after a read: ack what it returned once acted on, then read the rest. (The
    read's id, when it has one, is in `read_id`; an ack without it acks the same read.)"""
    if not count:
        return None if not waiting else f"{counted(waiting, 'line')} waiting: call {READ}"
    text = (
        f"Act on the {counted(count, 'line')}, then call {ACK}: it removes exactly them and "
        "keeps anything that arrived since."
    )
    if waiting:
        text += f" {counted(waiting, 'more line')} waiting: call {READ} again after the ack."
    return text


def next_after_ack(mode: str, preserved: int) -> str | None:
    """The step after an ack: read again when it removed nothing, or when lines remain."""
    if mode in ("stale", "refused"):
        return f"Nothing was removed: call {READ}, act on the lines, then {ACK}."
    if preserved:
        return f"{counted(preserved, 'line')} remain: call {READ} to read them."
    return None


# ----- operations -----------------------------------------------------------------------------
def push(room: RoomBackend, label: str, line: str | bytes) -> Pushed:
    return Pushed(label, str(room.path), room.push(line))


def poller_line(room: str, sender: str, body: str, ts: float, *, utc: bool = True) -> str:
    """The common poller line `[ts] [room] sender: body`, flattened to one line, for a
    producer to push (core/inbox/rooms.py writes it; imported here only when asked)."""
    from ackdeck.core.inbox.rooms import format_poller_line

    return format_poller_line(room, sender, body, ts, utc=utc)


def wait_ack(
    room: RoomBackend,
    pushed: Pushed,
    *,
    session: str | None = None,
    timeout: float | None = None,
    stop: Callable[[], bool] | None = None,
) -> Pushed:
    """Block until the pushed line was acked (by `session`, if given: an ack by another session
    also ends the wait, since the line is gone; the result names who it was), moved to the
    dead-letter room, or `timeout` passed. Blocking waits (core: watchfiles / XREAD)."""
    if session is not None:
        check_name(session)
    j = room.wait_acked(pushed.offset, timeout, stop)
    if j is None:
        return Pushed(pushed.room, pushed.path, pushed.offset, True)
    if j.dead_room is not None:
        return Pushed(pushed.room, pushed.path, pushed.offset, True, dead_room=j.dead_room)
    if j.acked_at is None:
        return Pushed(pushed.room, pushed.path, pushed.offset, True, removed=True)
    return Pushed(pushed.room, pushed.path, pushed.offset, True, True, j.acked_by, j.acked_at)


def _lines(room: RoomBackend, label: str, view: ReadResult, read_id: str | None = None) -> Lines:
    note = absent(room, label) if not view.lines else None
    path = str(room.path)
    return Lines(
        label,
        path,
        view.lines,
        view.start,
        view.end,
        view.epoch,
        view.data,
        note,
        view.waiting,
        read_id if view.lines else None,
    )


def absent(room: RoomBackend, label: str) -> str | None:
    """The missing-room note, checked only when a room gave nothing (a missing room is empty,
    so a room with lines needs no check)."""
    return None if room.exists() else absent_note(label, room.path)


def read(
    room: RoomBackend,
    label: str,
    session: str,
    *,
    reader: str | None = None,
    deliver: Deliver | None = None,
    confirm: Confirm | None = None,
    read_id: str | None = None,
    max_bytes: int | None = None,
) -> Lines:
    """A page of complete lines (at most `max_bytes`, default core.inbox.results.PAGE_BYTES;
    one longer line whole), how many more wait, and a receipt for `session` of that page.
    With `deliver`, the receipt is stored only after it returned (recorded only once
    delivered); if it raises, nothing is. `confirm` gets the result as it will be recorded
    (cut to what `deliver` took), last before it is. `read_id`: the id the door bound this
    read to (its `reader`), shown in the result."""

    handed: list[Lines] = []

    def hand_over(view: ReadResult) -> int | None:
        if deliver is None:
            return None
        handed.append(_lines(room, label, view, read_id))
        return deliver(handed[-1])

    def confirm_view(view: ReadResult) -> None:
        assert confirm is not None
        confirm(_lines(room, label, view, read_id))

    # What the room returns: cut to the lines delivered when `deliver` said how many.
    try:
        view = room.read(
            session,
            reader=reader,
            deliver=hand_over,
            confirm=None if confirm is None else confirm_view,
            max_bytes=max_bytes,
        )
    except MemoryError:
        raise out_of_memory(f"read of {label}", "no receipt was recorded") from None
    if handed and not view.lines and not handed[-1].raw:
        return handed[-1]  # the same empty read: its note was already checked
    return _lines(room, label, view, read_id)


def ack(
    room: RoomBackend,
    label: str,
    session: str,
    *,
    all: bool = False,  # noqa: A002 - the documented argument
    reader: str | None = None,
    deliver: Deliver | None = None,
    confirm: Confirm | None = None,
    max_bytes: int | None = None,
) -> Acked:
    """Remove exactly what `session` read (with `all`: the complete lines of the first page,
    as `read` takes it, handed to `deliver` first; the rest stays, counted as preserved).
    A cold ack is not raised: it comes back with mode `refused`, the lines kept as
    `preserved`, and the error in `refusal`, so every door reports the same counts."""
    path = str(room.path)
    hand_over = confirm_view = None
    if deliver is not None:
        hand_over = lambda view: deliver(_lines(room, label, view))  # noqa: E731
    if confirm is not None:
        confirm_view = lambda view: confirm(_lines(room, label, view))  # noqa: E731

    try:
        res: AckResult = room.ack(
            session,
            all=all,
            reader=reader,
            deliver=hand_over,
            confirm=confirm_view,
            max_bytes=max_bytes,
        )
    except MemoryError:
        # Every step before the ack's rename leaves the room as it was (its temp removed).
        raise out_of_memory(f"ack of {label}", "nothing was removed") from None
    except ColdAck as exc:
        return Acked(label, path, "refused", 0, exc.unread, str(exc), None, exc)
    note = absent(room, label) if not res.acked and not res.preserved else None
    return Acked(
        label, path, res.mode, res.acked, res.preserved, res.message, res.lines, None, note
    )


def status(
    rooms: Sequence[tuple[RoomBackend, str]],
    session: str | None = None,
    *,
    default: str | None = None,
    overdue: float | None = None,
) -> Status:
    """Counters of each `(room, label)`, with `session`'s own counts. `default` is the label
    of the door's default room (None: the first one listed); `overdue` a threshold in seconds
    over each room's own policy."""
    if default is None and rooms:
        default = rooms[0][1]
    # A file room's status hashes its head (up to HEAD_BYTES) to tell appends from a rewrite
    # once a read recorded its identity: over hundreds of rooms, OpenSSL's hash repays its
    # import (from 512 rooms on).
    use_openssl(len(rooms) * HEAD_BYTES)
    return Status(
        session, [state(r, label, session, label == default, overdue) for r, label in rooms]
    )


def state(
    room: RoomBackend,
    label: str,
    session: str | None = None,
    default: bool = False,
    overdue: float | None = None,
) -> RoomState:
    """One room's counters, as `status` gives each (a caller taking rooms one at a time)."""
    return RoomState(label, str(room.path), default, room.status(), session, overdue)


def out_of_memory(what: str, outcome: str) -> OutOfMemory:
    """The one-line error of an operation that ran out of memory (a page, or one line longer
    than the memory left, did not fit), saying what it left as it was."""
    return OutOfMemory(
        f"the {what} ran out of memory (a page, or a first line longer than the page, must "
        f"fit); {outcome}: free memory or read a smaller page, then try again"
    )


def not_delivered(where: str, exc: OSError) -> NotDelivered:
    """The error of a read whose lines a door could not hand over (nothing was recorded)."""
    why = "broken pipe" if isinstance(exc, BrokenPipeError) else (exc.strerror or str(exc))
    return NotDelivered(
        f"could not deliver the lines to {where} ({why}); no receipt was recorded, so an ack "
        "removes nothing of this read: read again"
    )


def wait(room: RoomBackend, session: str, timeout: float | None = None) -> bool:
    """True once `session` has unread lines, False when `timeout` passed first."""
    return room.wait(session, timeout)
