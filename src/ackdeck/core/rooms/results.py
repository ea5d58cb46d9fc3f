"""What a room's operations return, whichever backend: a notification file
(core/rooms/file/room.py) or a redis stream (core/rooms/redis/room.py). One type per concept; the
service passes them through (core/service/rooms.py).

Offsets are bytes (`int`) in a file room and entry IDs (`"1700000000000-0"`) in a redis room;
doors print them, never do arithmetic on them."""

from __future__ import annotations

from ackdeck.core.base.struct import Internal, Struct, derived
from ackdeck.core.base.text import counted, display_lines
from ackdeck.core.errors import InvalidInput

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ackdeck.core.errors import ColdAck

# A read returns a page: at most this many bytes of whole lines (a single longer line is
# returned alone, whole: a line is never cut), so a read's memory, its receipt and the reply a
# door writes are bounded by the page, not by the room. What is left says `waiting`; each read
# after an ack returns the next page. Doors may ask for another size (`room read --max-bytes`).
PAGE_BYTES = 1 << 20
# A redis room's page is also at most this many entries (fetched at once, before the byte
# limit cuts them).
PAGE_ENTRIES = 10_000


def check_page(max_bytes: int) -> int:
    """A page size a caller asked for: a positive number of bytes."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise InvalidInput(f"a read's page must be a positive number of bytes, not {max_bytes!r}")
    return max_bytes


# ----- how "delivered" was judged (issue 41; docs/concepts/proof.md) ---------------------
TRANSCRIPT = "transcript"  # read from the client's own record of what its model was shown
ESTIMATE = "estimate"  # what was handed over, sized to what the client shows its model whole
# Why an ack left part of a read, in the words every door shows.
UNSHOWN_WHY = "the client's transcript shows its model was not shown them"


class Shown:
    """What a client's own record proves of a read (issue 41): `count` gives how many of the
    read's lines still at the room's head (their bytes), from the first, its model was shown;
    `evidence` names the record (the audit keeps it, `room trace` shows it)."""

    __slots__ = ("count", "evidence")

    def __init__(self, count: Callable[[list[bytes]], int], evidence: str) -> None:
        self.count = count
        self.evidence = evidence


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


class ReadResult(Struct):
    """A page a read returned (or an ack-all removed), as the room returns it and every door
    shows it. The room fills what it read; the service adds the label the door shows (`room`,
    `path`), the missing-room `note` and the `read_id` the read is bound to."""

    # Raw bytes of each line (its JSON: each line's text, invalid UTF-8 replaced).
    lines: list[bytes]

    @derived
    def count(self) -> int:
        return len(self.lines)

    @derived
    def invalid_utf8(self) -> list[int]:
        """Indexes of the lines whose text replaced invalid bytes."""
        return display_lines(self.lines)[1]

    start: int | str  # a file's logical byte offset, or a redis entry ID ("" when none read)
    end: int | str
    epoch: int
    # The complete lines as one buffer (exactly the bytes a receipt records), for doors that
    # write them out unchanged.
    data: Internal[bytes] = b""
    # Complete lines in the room after this page that the read did not return (the page was
    # full), and any the door could not carry (it carries at most what its client shows its
    # model whole): read again once these are acked.
    waiting: int = 0
    room: str = ""  # the room as the door names it
    path: str = ""
    note: str | None = None  # the room does not exist yet (core.rooms.absent)
    # The id an ack may name to ack exactly this read from any process of the session (the
    # MCP door's reads; None: the read is not bound to a reader, as the CLI's).
    read_id: str | None = None
    # How "delivered" will be judged (issue 41): "transcript" when the client's own record of
    # what its model was shown is known (Claude Code's transcript: the ack removes only the
    # lines it shows), else "estimate" (the lines count as delivered once handed over, sized
    # to what the client shows its model whole), with the reason in one line.
    proof: str = ESTIMATE
    proof_note: str | None = None

    @derived
    def next(self) -> str | None:
        """What to do next, in words (the structured result is the message)."""
        return next_after_read(len(self.lines), self.waiting)

    def texts(self) -> list[str]:
        """Each line's text as the JSON shows it (invalid UTF-8 replaced)."""
        return display_lines(self.lines)[0]

    def emptied(self) -> ReadResult:
        """The same read without its lines: what the rest of a reply about it costs."""
        return self.replace(
            lines=[], end=self.start, data=b"", waiting=self.waiting + len(self.lines)
        )


class AckResult(Struct, kw_only=True):
    """What an ack did, as the room returns it and every door shows it."""

    room: str = ""  # the room as the door names it
    path: str = ""
    # ledger.AckMode (prefix | noop | stale | all), or refused (a cold ack: see `refusal`).
    mode: str
    acked: int
    preserved: int
    message: str
    lines: list[bytes] | None = None  # ack-all only: the lines it removed (JSON: their text)
    # Set when the room refused (a cold ack): the door reports it as an error.
    refusal: Internal[ColdAck | None] = None
    note: str | None = None  # the room does not exist yet (core.rooms.absent)
    # What the ack removed was judged by: "transcript" (the client's record of what its model
    # was shown) or "estimate" (what was handed over), with the reason for an estimate.
    proof: str = ESTIMATE
    proof_note: str | None = None
    # Lines of the read the transcript proves the model was NOT shown: kept, unread, and
    # returned by the next read (counted in `preserved` too).
    unshown: int = 0

    @derived
    def next(self) -> str | None:
        """What to do next, in words."""
        return next_after_ack(self.mode, self.preserved)

    def texts(self) -> list[str]:
        """The removed lines' text as the JSON shows it (none unless an ack-all)."""
        return display_lines(self.lines or [])[0]

    @property
    def must_reread(self) -> bool:
        """Nothing was removed and the session has to read again before an ack can work."""
        return self.mode in ("stale", "refused")


def ack_delivered(
    read: Callable[[], ReadResult], ack: Callable[[], AckResult], nothing: str
) -> AckResult:
    """`ack --all` through a door that delivers, on any kind of room: the lines are read (and
    delivered) first, and only that read is acked, so `ack --all | head` cannot clear lines
    nobody saw. The result's mode is then "all" and it carries the lines; `nothing` is its
    message when there were none."""
    got = read()
    if not got.lines:
        return AckResult(mode="all", acked=0, preserved=0, message=nothing, lines=[])
    res = ack()
    return AckResult(
        mode="all" if res.mode == "prefix" else res.mode,
        acked=res.acked,
        preserved=res.preserved,
        message=res.message,
        lines=got.lines,
    )


def age(at: float | None, now: float | None) -> float | None:
    """Seconds since `at` as of `now` (a status's `checked_at`), never negative; None when
    either is unknown (no such line, or no mark dates it)."""
    if at is None or now is None:
        return None
    return round(max(0.0, now - at), 3)


def is_overdue(waited: float | None, threshold: float | None) -> bool:
    """Has something waited longer than the threshold? (No threshold or no age: no.)"""
    return threshold is not None and waited is not None and waited > threshold


class SessionStatus(Struct):
    """One session's counts in a room, with their ages as of the room status's clock."""

    in_flight: int
    unread: int
    # When the in-flight read was taken (None: nothing in flight), and when the session's
    # oldest unread line was first seen (None: nothing unread, or not known).
    read_at: float | None = None
    oldest_unread_at: float | None = None
    # The room status's clock, ages are taken against it, and the room's threshold (None: no
    # alert), set when the status is labelled for a door (RoomStatus.labelled).
    checked_at: Internal[float | None] = None
    overdue_after: Internal[float | None] = None

    @derived
    def in_flight_age(self) -> float | None:
        """Seconds since the unacked read (None: none)."""
        return age(self.read_at, self.checked_at)

    @derived
    def unread_age(self) -> float | None:
        """Seconds since its oldest unread line was first seen."""
        return age(self.oldest_unread_at, self.checked_at)

    @derived
    def overdue(self) -> bool:
        """Its read waits for an ack, or a line for it, past the threshold."""
        t = self.overdue_after
        return is_overdue(self.in_flight_age, t) or is_overdue(self.unread_age, t)


class RoomStatus(Struct, kw_only=True):
    """One room's counters, as the room returns them and every door shows them. The service
    adds the label the door shows (`room`), whether it is the door's default room, and the
    asking `session`, whose own counts and ages it shows (`in_flight`, `unread`, ...)."""

    room: str = ""  # the room as the door names it
    path: str  # a file's path, or a redis room's URL without its password
    default: bool = False  # the door's default room
    exists: bool
    pending: int
    partial_bytes: int  # always 0 in a redis room: an entry is added whole
    acked_total: int
    preserved_total: int
    pushed_total: int  # a file's base + size; a redis stream's entries ever added
    epoch: int
    last_ack_at: float | None
    # Late unlocked writers: lines carried in from replaced inodes (ever), and replaced inodes
    # kept past their grace period right now because a process still holds them open (file
    # rooms only: XADD has no such window).
    late_total: int = 0
    held_open: int = 0
    # Ages (core/rooms/file/seen_marks.py): the clock when this status was taken, when the oldest
    # line in the room and the oldest line no session has read were first seen.
    checked_at: float | None = None
    oldest_pending_at: float | None = None
    oldest_unread_at: float | None = None
    deliveries: int = 0  # how many reads handed out the oldest line (core/rooms/file/readlog.py)
    reads_unlogged: int = 0  # reads the log is missing (it could not be written)
    # The room's policy (core/rooms/policy.py), or the door's --overdue over it, and the lines
    # it sent to the dead-letter room.
    overdue_after: float | None = None
    max_deliveries: int | None = None
    owner: str | None = None
    dead_total: int = 0
    queue: bool = False  # a work queue: each line is claimed by one session (rooms/queue.py)
    session: Internal[str | None] = None  # the asking session
    # A room with one reader, whatever session asks (a Claude Code mailbox: its agent, the
    # only one who reads it; an entry it read is not unread for anyone).
    reader: Internal[str | None] = None

    def counts_of(self, session: str | None) -> tuple[int, int]:
        """`(in_flight, unread)` of `session`. A session without a receipt has nothing in
        flight and every complete line unread; no session at all: (0, pending). A room with
        one `reader` gives its counts to every asker."""
        if self.reader is not None:
            session = self.reader
        mine = self.sessions.get(session) if session is not None else None
        if mine is None:
            return 0, self.pending
        return mine.in_flight, mine.unread

    def ages_of(self, session: str | None) -> tuple[float | None, float | None]:
        """`(in_flight_age, unread_age)` of `session`: how long its in-flight read has waited
        for an ack, and how long its oldest unread line has waited to be read. Without a
        receipt (or a session) nothing is in flight and the oldest line in the room is its
        oldest unread."""
        if self.reader is not None:
            session = self.reader
        mine = self.sessions.get(session) if session is not None else None
        if mine is None:
            return None, age(self.oldest_pending_at, self.checked_at)
        return age(mine.read_at, self.checked_at), age(mine.oldest_unread_at, self.checked_at)

    # The asking session's own counts, its timestamps shown as ages.
    @derived
    def in_flight(self) -> int:
        return self.counts_of(self.session)[0]

    @derived
    def unread(self) -> int:
        return self.counts_of(self.session)[1]

    @derived
    def in_flight_age(self) -> float | None:
        return self.ages_of(self.session)[0]

    @derived
    def unread_age(self) -> float | None:
        return self.ages_of(self.session)[1]

    # Seconds since the oldest line in the room, and the oldest line no session has read,
    # were first seen (None: no such line, or no mark dates it).
    @derived
    def oldest_pending_age(self) -> float | None:
        return age(self.oldest_pending_at, self.checked_at)

    @derived
    def oldest_unread_age(self) -> float | None:
        return age(self.oldest_unread_at, self.checked_at)

    @derived
    def overdue(self) -> bool:
        """The oldest line has waited past overdue_after (unread or unacked)."""
        return is_overdue(self.oldest_pending_age, self.overdue_after)

    sessions: dict[str, SessionStatus] = {}  # copied per instance by Struct

    @derived
    def note(self) -> str | None:
        """The words every door shows for a room that does not exist yet, else None."""
        if self.exists:
            return None
        from ackdeck.core.rooms.absent import absent_note

        return absent_note(self.room, self.path)

    def labelled(
        self, room: str, *, default: bool, session: str | None, overdue: float | None = None
    ) -> RoomStatus:
        """This status as a door shows it: its label, whether it is the default room, the
        asking session, and the door's --overdue (`overdue`) over the room's threshold."""
        t = self.overdue_after if overdue is None else overdue
        at = self.checked_at
        sessions = {n: s.replace(checked_at=at, overdue_after=t) for n, s in self.sessions.items()}
        return self.replace(
            room=room, default=default, session=session, overdue_after=t, sessions=sessions
        )
