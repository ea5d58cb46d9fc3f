"""Facts every door derives from a room, written once and cheap to import (the hooks use them
on every turn without loading the result classes): a room's short name and its label among
others, and a session's `in_flight` / `unread` counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence
    from pathlib import Path

    from ackdeck.core.inbox.results import RoomStatus
    from ackdeck.core.inbox.room_url import RedisAddress


def room_name(room: str | os.PathLike[str] | RedisAddress) -> str:
    """A room's short name: a file's basename, a redis room's NAME (the URL's last part)."""
    name = getattr(room, "name", None)
    if isinstance(name, str):
        return name
    return str(room).rstrip("/").rsplit("/", 1)[-1]


def label_of(rooms: Sequence[Path | RedisAddress | str], room: Path | RedisAddress | str) -> str:
    """How a door names `room` among `rooms`: its short name when that is unambiguous, else
    the full path or URL."""
    short = room_name(room)
    return short if sum(room_name(r) == short for r in rooms) == 1 else str(room)


def session_counts(st: RoomStatus, session: str | None) -> tuple[int, int]:
    """`(in_flight, unread)` of `session` in a room's status. A session without a receipt has
    nothing in flight and every complete line unread; no session at all: (0, pending)."""
    mine = st.sessions.get(session) if session is not None else None
    if mine is None:
        return 0, st.pending
    return mine.in_flight, mine.unread
