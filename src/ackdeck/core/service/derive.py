"""Facts every door derives from a room, written once and cheap to import (the hooks use them
on every turn without loading the result classes): a session's `in_flight` / `unread` counts,
and ages. (A room's label among others is the deck's: `core.service.deck.Deck.label`.)"""

from __future__ import annotations

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ackdeck.core.inbox.results import RoomStatus


def session_counts(st: RoomStatus, session: str | None) -> tuple[int, int]:
    """`(in_flight, unread)` of `session` in a room's status. A session without a receipt has
    nothing in flight and every complete line unread; no session at all: (0, pending)."""
    mine = st.sessions.get(session) if session is not None else None
    if mine is None:
        return 0, st.pending
    return mine.in_flight, mine.unread


def age(at: float | None, now: float | None) -> float | None:
    """Seconds since `at` as of `now` (a status's `checked_at`), never negative; None when
    either is unknown (no such line, or no mark dates it)."""
    if at is None or now is None:
        return None
    return round(max(0.0, now - at), 3)


def session_ages(st: RoomStatus, session: str | None) -> tuple[float | None, float | None]:
    """`(in_flight_age, unread_age)` of `session`: how long its in-flight read has waited for
    an ack, and how long its oldest unread line has waited to be read. Without a receipt
    (or a session) nothing is in flight and the oldest line in the room is its oldest unread."""
    mine = st.sessions.get(session) if session is not None else None
    if mine is None:
        return None, age(st.oldest_pending_at, st.checked_at)
    return age(mine.read_at, st.checked_at), age(mine.oldest_unread_at, st.checked_at)


def is_overdue(waited: float | None, threshold: float | None) -> bool:
    """Has something waited longer than the threshold? (No threshold or no age: no.)"""
    return threshold is not None and waited is not None and waited > threshold
