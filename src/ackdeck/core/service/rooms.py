"""Room operations for every door: push, read, ack, status, wait.

Each takes an open room (`core.service.refs.open_room`, a file or a redis stream) and the
label the door shows for it (`core.service.deck.Deck.label`), calls `Room`'s public API once,
and returns the room's own value (core/rooms/results.py), labelled as the door names the room;
each value encodes itself (core/base/struct.py). The derived numbers live in those values: a
session's `unread` and `in_flight` (`RoomStatus.counts_of`), ages, and a refused ack's
`preserved` (the lines the room held when it refused, counted by the room under its lock).
"""

from __future__ import annotations

from ackdeck.core.base.digest import use_openssl
from ackdeck.core.base.names import check_name
from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import ColdAck, NotDelivered, OutOfMemory
from ackdeck.core.rooms.absent import ABSENT_CELL as ABSENT_CELL  # for doors that show it
from ackdeck.core.rooms.absent import absent_note as absent_note
from ackdeck.core.rooms.file.ledger import HEAD_BYTES
from ackdeck.core.rooms.results import ACK as ACK  # the words naming the next step
from ackdeck.core.rooms.results import ESTIMATE as ESTIMATE
from ackdeck.core.rooms.results import PAGE_BYTES as PAGE_BYTES  # for doors that name it
from ackdeck.core.rooms.results import READ as READ
from ackdeck.core.rooms.results import TRANSCRIPT as TRANSCRIPT
from ackdeck.core.rooms.results import UNSHOWN_WHY as UNSHOWN_WHY
from ackdeck.core.rooms.results import AckResult, ReadResult, RoomStatus, SessionStatus
from ackdeck.core.rooms.results import Shown as Shown
from ackdeck.core.rooms.results import age as age  # for doors that date other things alike
from ackdeck.core.rooms.results import check_page as check_page
from ackdeck.core.rooms.results import is_overdue as is_overdue
from ackdeck.core.rooms.results import next_after_ack as next_after_ack
from ackdeck.core.rooms.results import next_after_read as next_after_read

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ackdeck.core.rooms.line_counts import LineCounts as LineCounts  # see __getattr__
    from ackdeck.core.rooms.room_backend import RoomBackend

    # Returns None (every line was delivered) or how many lines, from the first, were.
    Deliver = Callable[["Lines"], "int | None"]
    # Gets what will be recorded, last before it is; raising records nothing.
    Confirm = Callable[["Lines"], None]


def __getattr__(name: str) -> object:
    """`LineCounts`, for the doors that count a room again and again (the dashboard), imported
    when first asked for: no per-turn command needs it (PEP 562)."""
    if name == "LineCounts":
        from ackdeck.core.rooms.line_counts import LineCounts

        return LineCounts
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ----- results ------------------------------------------------------------------------------
class Pushed(Struct):
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


# A read's page and an ack's outcome are the room's own values (core/rooms/results.py): the
# service fills the label the door shows, and every door encodes them as they are.
Lines = ReadResult
Acked = AckResult


# A room's status and each session's counts are the room's own values too: the service adds
# the label, the default flag, the asking session and the door's --overdue (`labelled`).
RoomState = RoomStatus
SessionCounts = SessionStatus


class Status(Struct):
    session: str | None
    rooms: list[RoomStatus]


# ----- operations -----------------------------------------------------------------------------
def push(room: RoomBackend, label: str, line: str | bytes) -> Pushed:
    return Pushed(label, room.path_text, room.push(line))


def poller_line(room: str, sender: str, body: str, ts: float, *, utc: bool = True) -> str:
    """The common poller line `[ts] [room] sender: body`, flattened to one line, for a
    producer to push (core/rooms/file/room.py writes it; imported here only when asked)."""
    from ackdeck.core.rooms.file.room import format_poller_line

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
    return view.replace(
        room=label,
        path=room.path_text,
        note=note,
        read_id=read_id if view.lines else None,
        proof_note=view.proof_note or NO_TRANSCRIPT,  # a door that knows better replaces it
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
    """A page of complete lines (at most `max_bytes`, default core.rooms.results.PAGE_BYTES;
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
    if handed and not view.lines and not handed[-1].lines:
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
    shown: Shown | None = None,
    estimate: str | None = None,
) -> Acked:
    """Remove exactly what `session` read (with `all`: the complete lines of the first page,
    as `read` takes it, handed to `deliver` first; the rest stays, counted as preserved).
    A cold ack is not raised: it comes back with mode `refused`, the lines kept as
    `preserved`, and the error in `refusal`, so every door reports the same counts.

    `shown` (issue 41): how many of the read's lines, from the first, the client's transcript
    shows its model was shown; only those go, and the result says `proof: transcript`.
    Without it the ack is an estimate, for the reason `estimate` gives (one line)."""
    path = room.path_text
    proof, note = (ESTIMATE, ACK_ALL) if all else proof_of(room, shown, estimate)
    if proof != TRANSCRIPT:
        shown = None
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
            shown=shown,
        )
    except MemoryError:
        # Every step before the ack's rename leaves the room as it was (its temp removed).
        raise out_of_memory(f"ack of {label}", "nothing was removed") from None
    except ColdAck as exc:
        return Acked(
            mode="refused",
            acked=0,
            preserved=exc.unread,
            message=str(exc),
            room=label,
            path=path,
            refusal=exc,
            proof=proof,
            proof_note=note,
        )
    absent_note = absent(room, label) if not res.acked and not res.preserved else None
    return res.replace(room=label, path=path, note=absent_note, proof=proof, proof_note=note)


# Why an ack or a read is an estimate, in the words every door shows (docs/concepts/proof.md).
NO_TRANSCRIPT = (
    "no client transcript is known (only Claude Code keeps one ackdeck reads: "
    "CLAUDE_CODE_SESSION_ID is not set)"
)
CLI_IN_CLAUDE = (
    "read from the agent's shell: Claude Code's Bash tool may cut what its model is shown, and "
    "ackdeck does not match a command's output to its read (read with the MCP tool "
    "room_list_new for a proven ack, also from the shell)"
)
SHELL_NO_TRANSCRIPT = (
    "the session's Claude Code transcript was not found (CLAUDE_CODE_SESSION_ID names none "
    "under the projects directory): the MCP read is not acked from the shell without it"
)
ACK_ALL = "ack all removes the lines its own reply returns (an owner's explicit act)"
NOT_PROVEN_HERE = "this room's backend removes a read whole: the transcript is not applied"


def proof_of(
    room: RoomBackend, shown: Shown | None, estimate: str | None
) -> tuple[str, str | None]:
    """(proof, the reason for an estimate) of an ack of `room` given `shown` / `estimate`."""
    if shown is None:
        return ESTIMATE, estimate or NO_TRANSCRIPT
    if not room.PROVES_SHOWN:
        return ESTIMATE, NOT_PROVEN_HERE
    return TRANSCRIPT, None


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
    return room.status().labelled(label, default=default, session=session, overdue=overdue)


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
