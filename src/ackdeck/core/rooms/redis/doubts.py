"""Reads of a redis room whose reader never learned whether their receipt was stored.

After a lost reply a read retries storing its receipt; when the server stays out of reach it
cannot tell whether the receipt landed, yet it already delivered the lines, and its caller is
told to read again. If the receipt did land, the next ack would remove those lines. So the
reader leaves a marker here, on its own host:

    $ACKDECK_HOME/redis-doubts/<digest of room name and session>.json   {"room", "session", "read"}

Keyed by the room's name, not its URL: one server is reached under many addresses (a name,
an IP, a proxy), and a marker missed under another address would let the ack through. A room
of the same name on another server is refused once too, which is safe (it reads again).

The next ack of that session on this host sends the read's ID: the server refuses the ack,
turns the session's receipt into a cursor (it authorises nothing) and fences the read off, so
its command cannot land later either; the next successful read fences it too. Either clears
the marker once the server has answered. A marker that cannot be parsed still refuses.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.jsonfields import parse as parse_json
from ackdeck.core.base.statefile import read_state
from ackdeck.core.errors import CorruptState

UNKNOWN = "unknown"  # the read ID of a marker that cannot be parsed: still refuses


class Doubts:
    def __init__(
        self, name: str, env: Mapping[str, str], home: str | os.PathLike[str] | None = None
    ) -> None:
        self.room = name  # the room's name (the stream key's hash tag)
        # The door's home (--home) when it has one, as every other state of the door.
        where = Path(home) if home else locations.default_home(env)
        self.home = where.expanduser().absolute()
        self.directory = locations.redis_doubts_dir(self.home)

    def _file(self, session: str) -> Path:
        key = hashlib.sha256(f"{self.room}\0{session}".encode()).hexdigest()[:32]
        return locations.redis_doubt(self.home, key)

    def get(self, session: str) -> str | None:
        """The doubtful read's ID, or None when there is none."""
        try:
            raw = read_state(self._file(session))
        except (OSError, CorruptState):
            return UNKNOWN
        if raw is None:
            return None
        try:
            read = parse_json(raw)["read"]
        except (ValueError, KeyError, TypeError):
            return UNKNOWN
        return read if isinstance(read, str) and read else UNKNOWN

    def put(self, session: str, read_id: str) -> str | None:
        """Record the doubt; None when written, else why it could not be."""
        body = json.dumps({"room": self.room, "session": session, "read": read_id})
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic.atomic_write(self._file(session), body.encode(), fsync=True)
        except OSError as exc:
            return exc.strerror or str(exc)
        return None

    def clear(self, session: str, read_id: str) -> None:
        """Drop the marker once the server fenced `read_id` off (a newer doubt stays)."""
        if self.get(session) == read_id:
            atomic.unlink_quietly(self._file(session))
